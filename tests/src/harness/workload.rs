//! Workloads for the harness: the IPC stress mix with its delivery ledger, the client-server
//! workload (every core's client Calls one shared server, checked by the same ledger), and the
//! adversarial mix of random system calls.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};

use kernel::syscall::{result, MintTarget};
use kernel::{CapSlot, CpuId, Error, Kernel, ObjRef, Rights, Strategy, Syscall, ThreadId};

use super::{FakeHal, Programs, XorShift};

const MAGIC: usize = 0x5EED_CAFE;

fn slot(i: usize) -> CapSlot {
    CapSlot::new(i).expect("slot in range")
}

/// Slot of the private, never-signalled notification finished threads wait on.
pub const PARK_SLOT: usize = kernel::config::CSPACE_SLOTS - 1;

/// Gives `t` a private notification in [`PARK_SLOT`] and makes it wait there once finished.
pub fn park<S: Strategy>(k: &mut Kernel<S, FakeHal>, programs: &Programs, t: ThreadId) {
    let n = k.create_notification().expect("notification");
    k.install_cap(t, slot(PARK_SLOT), ObjRef::Notification(n), Rights::READ, 0)
        .expect("park cap");
    programs.set_park(
        t,
        Syscall::Wait {
            ntfn: slot(PARK_SLOT),
        }
        .encode(),
    );
}

/// Records every delivered message and reply: exactly-once checking.
pub struct Ledger {
    per: usize,
    recv: Vec<AtomicU32>,
    replies: Vec<AtomicU32>,
    received: AtomicU64,
    replied: AtomicU64,
    expected_msgs: AtomicU64,
    expected_replies: AtomicU64,
    /// Notification wake-ups seen by waiters.
    pub wakeups: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl Ledger {
    fn new(per: usize) -> Self {
        let n = kernel::config::MAX_THREADS * per;
        Self {
            per,
            recv: (0..n).map(|_| AtomicU32::new(0)).collect(),
            replies: (0..n).map(|_| AtomicU32::new(0)).collect(),
            received: AtomicU64::new(0),
            replied: AtomicU64::new(0),
            expected_msgs: AtomicU64::new(0),
            expected_replies: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            errors: Mutex::new(Vec::new()),
        }
    }

    fn error(&self, e: String) {
        let mut errs = self.errors.lock().unwrap();
        if errs.len() < 20 {
            errs.push(e);
        }
    }

    /// A receiver got `msg` with `badge`.
    fn got(&self, badge: usize, msg: &[usize; 4]) {
        let (tag, seq) = (msg[0], msg[1]);
        if msg[2] != MAGIC ^ tag ^ seq || badge != tag + 100 || tag >= 64 || seq >= self.per {
            self.error(format!("corrupt message {msg:x?} badge {badge}"));
            return;
        }
        self.recv[tag * self.per + seq].fetch_add(1, Relaxed);
        self.received.fetch_add(1, Release);
    }

    fn reply(&self, tag: usize, seq: usize) {
        self.replies[tag * self.per + seq].fetch_add(1, Relaxed);
        self.replied.fetch_add(1, Release);
    }

    /// Whether every expected message and reply arrived.
    pub fn complete(&self) -> bool {
        self.received.load(Acquire) >= self.expected_msgs.load(Relaxed)
            && self.replied.load(Acquire) >= self.expected_replies.load(Relaxed)
    }

    /// Messages delivered so far.
    pub fn received(&self) -> u64 {
        self.received.load(Relaxed)
    }

    /// Checks exactly-once delivery of every message and reply, and that no program saw an
    /// error.
    pub fn verify(&self, senders: &[ThreadId], callers: &[ThreadId]) -> Result<(), String> {
        let errs = self.errors.lock().unwrap();
        if !errs.is_empty() {
            return Err(format!("program errors: {errs:?}"));
        }
        for &t in senders.iter().chain(callers) {
            for seq in 0..self.per {
                let n = self.recv[t.index() * self.per + seq].load(Relaxed);
                if n != 1 {
                    return Err(format!("message {seq} of {t:?} delivered {n} times"));
                }
            }
        }
        for &t in callers {
            for seq in 0..self.per {
                let n = self.replies[t.index() * self.per + seq].load(Relaxed);
                if n != 1 {
                    return Err(format!("reply {seq} to {t:?} delivered {n} times"));
                }
            }
        }
        let total = self.received.load(Relaxed);
        if total != self.expected_msgs.load(Relaxed) {
            return Err(format!(
                "{total} messages received, expected {}",
                self.expected_msgs.load(Relaxed)
            ));
        }
        Ok(())
    }
}

/// The threads of an IPC workload, for verification.
pub struct IpcWorkload {
    /// The ledger.
    pub ledger: Arc<Ledger>,
    /// Threads that Send.
    pub senders: Vec<ThreadId>,
    /// Threads that Call.
    pub callers: Vec<ThreadId>,
}

impl IpcWorkload {
    /// Checks the ledger.
    pub fn verify(&self) -> Result<(), String> {
        self.ledger.verify(&self.senders, &self.callers)
    }
}

/// A caller (`call`) or sender making `per` calls on slot 0; retries `Interrupted` calls.
fn client(
    ledger: Arc<Ledger>,
    me: usize,
    per: usize,
    call: bool,
) -> impl FnMut(&kernel::Regs) -> Option<kernel::Regs> + Send {
    let mut seq = 0;
    let mut started = false;
    move |ret| {
        if started {
            match result(ret) {
                Ok((_, reply)) => {
                    if call {
                        if reply != [me, seq, !seq, 0] {
                            ledger.error(format!("thread {me}: wrong reply {reply:x?} for {seq}"));
                        }
                        ledger.reply(me, seq);
                    }
                    seq += 1;
                }
                Err(Error::Interrupted) => {}
                Err(e) => {
                    ledger.error(format!("thread {me}: call {seq} failed: {e:?}"));
                    seq += 1;
                }
            }
        }
        started = true;
        if seq == per {
            return None;
        }
        let msg = [me, seq, MAGIC ^ me ^ seq, 0];
        Some(
            if call {
                Syscall::Call { ep: slot(0), msg }
            } else {
                Syscall::Send { ep: slot(0), msg }
            }
            .encode(),
        )
    }
}

/// A server: ReplyRecv forever on slot 0, echoing (tag, seq).
fn server(ledger: Arc<Ledger>) -> impl FnMut(&kernel::Regs) -> Option<kernel::Regs> + Send {
    let mut started = false;
    move |ret| {
        let mut reply = [0; 4];
        if started {
            match result(ret) {
                Ok((badge, msg)) => {
                    ledger.got(badge, &msg);
                    reply = [msg[0], msg[1], !msg[1], 0];
                }
                Err(e) => ledger.error(format!("server: {e:?}")),
            }
        }
        started = true;
        Some(
            Syscall::ReplyRecv {
                ep: slot(0),
                msg: reply,
            }
            .encode(),
        )
    }
}

/// Builds the IPC stress mix on `cores` cores, `per` messages per client:
/// * per core, a caller and a server sharing a private endpoint;
/// * if `shared`: per core a caller whose server runs on the next core; a shared endpoint with
///   a sender on every core and receivers on the first and last core; a notification signalled
///   from core 0 and waited on from the last core; a migrator that keeps moving the
///   cross-core callers and the senders between cores (their calls may then return
///   `Interrupted` and are retried).
///
/// Priorities are drawn from `seed`.
pub fn ipc<S: Strategy>(
    k: &mut Kernel<S, FakeHal>,
    programs: &Programs,
    per: usize,
    shared: bool,
    seed: u64,
) -> IpcWorkload {
    let cores = k.cores();
    let mut rng = XorShift::new(seed);
    let ledger = Arc::new(Ledger::new(per));
    let mut w = IpcWorkload {
        ledger: ledger.clone(),
        senders: vec![],
        callers: vec![],
    };
    let rw = Rights::READ | Rights::WRITE;
    let mut prio = || 8 + rng.below(4) as usize;
    let mut movable = vec![];
    let pair = |k: &mut Kernel<S, FakeHal>,
                w: &mut IpcWorkload,
                client_core: CpuId,
                server_core: CpuId,
                prio_c,
                prio_s| {
        let ep = k.create_endpoint().unwrap();
        let c = k.create_thread(prio_c, client_core, None).unwrap();
        let s = k.create_thread(prio_s, server_core, None).unwrap();
        k.install_cap(
            c,
            slot(0),
            ObjRef::Endpoint(ep),
            Rights::WRITE,
            c.index() + 100,
        )
        .unwrap();
        k.install_cap(s, slot(0), ObjRef::Endpoint(ep), rw, 0)
            .unwrap();
        programs.set(c, true, client(ledger.clone(), c.index(), per, true));
        park(k, programs, c);
        programs.set(s, false, server(ledger.clone()));
        k.start(s).unwrap();
        k.start(c).unwrap();
        w.callers.push(c);
        c
    };
    for c in 0..cores {
        let (a, b) = (prio(), prio());
        pair(k, &mut w, c, c, a, b);
    }
    if shared {
        for c in 0..cores {
            let (a, b) = (prio(), prio());
            let t = pair(k, &mut w, c, (c + 1) % cores, a, b);
            movable.push(t);
        }
        let ep = k.create_endpoint().unwrap();
        for c in 0..cores {
            let t = k.create_thread(prio(), c, None).unwrap();
            k.install_cap(
                t,
                slot(0),
                ObjRef::Endpoint(ep),
                Rights::WRITE,
                t.index() + 100,
            )
            .unwrap();
            programs.set(t, true, client(ledger.clone(), t.index(), per, false));
            park(k, programs, t);
            k.start(t).unwrap();
            w.senders.push(t);
            movable.push(t);
        }
        for c in [0, cores - 1] {
            let t = k.create_thread(prio(), c, None).unwrap();
            k.install_cap(t, slot(0), ObjRef::Endpoint(ep), rw, 0)
                .unwrap();
            programs.set(t, false, server(ledger.clone()));
            k.start(t).unwrap();
        }
        let n = k.create_notification().unwrap();
        let sig = k.create_thread(prio(), 0, None).unwrap();
        let wai = k.create_thread(prio(), cores - 1, None).unwrap();
        k.install_cap(sig, slot(0), ObjRef::Notification(n), Rights::WRITE, 1)
            .unwrap();
        k.install_cap(wai, slot(0), ObjRef::Notification(n), Rights::READ, 0)
            .unwrap();
        let mut left = per;
        programs.set(sig, true, move |_: &kernel::Regs| {
            left = left.checked_sub(1)?;
            Some(Syscall::Signal { ntfn: slot(0) }.encode())
        });
        let l = ledger.clone();
        let mut started = false;
        programs.set(wai, false, move |ret: &kernel::Regs| {
            if started {
                match result(ret) {
                    Ok((1, _)) => {
                        l.wakeups.fetch_add(1, Relaxed);
                    }
                    other => l.error(format!("waiter: {other:?}")),
                }
            }
            started = true;
            Some(Syscall::Wait { ntfn: slot(0) }.encode())
        });
        park(k, programs, sig);
        k.start(sig).unwrap();
        k.start(wai).unwrap();
        // The migrator.
        let m = k.create_thread(prio(), 0, None).unwrap();
        for (i, &t) in movable.iter().enumerate() {
            k.install_cap(m, slot(i), ObjRef::Thread(t), Rights::MANAGE, 0)
                .unwrap();
        }
        let mut mr = XorShift::new(seed ^ 0xABCD);
        let count = movable.len();
        let mut moves = per / 4;
        let l = ledger.clone();
        programs.set(m, true, move |ret: &kernel::Regs| {
            if let Err(e) = result(ret) {
                l.error(format!("migrator: {e:?}"));
            }
            moves = moves.checked_sub(1)?;
            Some(
                if moves % 2 == 0 {
                    Syscall::Yield
                } else {
                    Syscall::SetAffinity {
                        thread: slot(mr.below(count as u64) as usize),
                        core: mr.below(cores as u64) as usize,
                    }
                }
                .encode(),
            )
        });
        park(k, programs, m);
        k.start(m).unwrap();
    }
    let expected = (w.callers.len() + w.senders.len()) * per;
    ledger.expected_msgs.store(expected as u64, Relaxed);
    ledger
        .expected_replies
        .store((w.callers.len() * per) as u64, Relaxed);
    w
}

/// Priority of [`client_server`]'s server: above its clients', so that a Call from another core
/// preempts core 0's client (the server is woken there by a Reschedule IPI) instead of waiting
/// for that client to block.
pub const SERVER_PRIORITY: usize = 11;
/// Priority of [`client_server`]'s clients.
pub const CLIENT_PRIORITY: usize = 10;

/// Builds the client-server workload on `cores` cores, `per` Calls per client: one server
/// thread on core 0 in ReplyRecv on one shared endpoint, and one client on every core (core 0's
/// too) Calling it, each with its own badge. Every message and reply goes through the
/// [`Ledger`] as in [`ipc`] ([`IpcWorkload::verify`] checks each delivered exactly once).
///
/// Unlike [`ipc`]'s private pairs, the cores share objects here: the endpoint, the server's TCB
/// and core 0's run queue. That is the contended case of the client-server benchmark's `shared`
/// variant ([`crate::bench`], which puts the clients on cores 1.. only and is timed rather than
/// checked); here core 0 also runs a client, so that every core makes Calls and a 1-core run is
/// the ping-pong. No lock-free kernel can run it (`NoLock` would race on the shared objects).
pub fn client_server<S: Strategy>(
    k: &mut Kernel<S, FakeHal>,
    programs: &Programs,
    per: usize,
) -> IpcWorkload {
    let cores = k.cores();
    let ledger = Arc::new(Ledger::new(per));
    let mut w = IpcWorkload {
        ledger: ledger.clone(),
        senders: vec![],
        callers: vec![],
    };
    let ep = k.create_endpoint().expect("endpoint");
    let s = k
        .create_thread(SERVER_PRIORITY, 0, None)
        .expect("server thread");
    k.install_cap(
        s,
        slot(0),
        ObjRef::Endpoint(ep),
        Rights::READ | Rights::WRITE,
        0,
    )
    .expect("server cap");
    programs.set(s, false, server(ledger.clone()));
    k.start(s).expect("start server");
    for core in 0..cores {
        let c = k
            .create_thread(CLIENT_PRIORITY, core, None)
            .expect("client thread");
        k.install_cap(
            c,
            slot(0),
            ObjRef::Endpoint(ep),
            Rights::WRITE,
            c.index() + 100,
        )
        .expect("client cap");
        programs.set(c, true, client(ledger.clone(), c.index(), per, true));
        park(k, programs, c);
        k.start(c).expect("start client");
        w.callers.push(c);
    }
    ledger.expected_msgs.store((cores * per) as u64, Relaxed);
    ledger.expected_replies.store((cores * per) as u64, Relaxed);
    w
}

/// Results seen by the adversaries, by error code (0 = success).
#[derive(Default)]
pub struct Outcomes {
    /// Counts per result code.
    pub codes: Vec<AtomicU64>,
    /// Calls made.
    pub calls: AtomicU64,
}

impl Outcomes {
    fn new() -> Self {
        Self {
            codes: (0..32).map(|_| AtomicU64::new(0)).collect(),
            calls: AtomicU64::new(0),
        }
    }
}

/// Slots of an adversary's CSpace (see [`adversarial`]).
pub mod adv_slots {
    /// Pump endpoint, READ.
    pub const PUMP: usize = 0;
    /// Sink endpoint, WRITE.
    pub const SINK: usize = 1;
    /// Notification, READ|WRITE.
    pub const NTFN: usize = 2;
    /// A victim thread, MANAGE.
    pub const VICTIM: usize = 3;
    /// Another adversary, READ|GRANT (useless for management).
    pub const PEER: usize = 4;
    /// A 64-page RAM region shared by all adversaries, READ|WRITE|GRANT|MANAGE (so they split,
    /// merge, revoke and delete it under each other's feet).
    pub const MEM: usize = 5;
    /// The shared address space, WRITE.
    pub const ASPACE: usize = 6;
    /// An IRQ handler, all rights.
    pub const IRQ: usize = 7;
    /// The control capability.
    pub const CONTROL: usize = 8;
    /// Sink endpoint, WRITE|GRANT.
    pub const SINK_GRANT: usize = 9;
    /// First empty slot.
    pub const FREE: usize = 10;
    /// Two slots (`SCRATCH`, `SCRATCH + 1`) only `CreateEndpoint` and `CreateNotification`
    /// fill: no blocking call names them (the random slots are below 16), since an adversary
    /// receiving on an endpoint nobody else holds would block for ever.
    pub const SCRATCH: usize = 18;
}

fn random_call(r: &mut XorShift, cores: usize) -> kernel::Regs {
    use kernel::syscall::nr;
    // Argument generators: mostly plausible, sometimes garbage.
    let slot_arg = |r: &mut XorShift| match r.below(20) {
        0 => r.next_u64() as usize,
        1 => kernel::config::CSPACE_SLOTS + r.below(8) as usize,
        _ => r.below(16) as usize,
    };
    let num = match r.below(40) {
        0 => r.next_u64() as usize,
        1 => 0,
        2..=4 => nr::YIELD,
        _ => 1 + r.below(nr::MAX as u64 + 2) as usize,
    };
    let mut raw = [num, slot_arg(r), 0, 0, 0, 0];
    let small = |r: &mut XorShift| match r.below(10) {
        0 => r.next_u64() as usize,
        1..=3 => 0,
        _ => r.below(40) as usize,
    };
    match num {
        nr::CALL | nr::SEND | nr::NBSEND | nr::REPLY | nr::REPLY_RECV => {
            for w in &mut raw[2..] {
                *w = r.next_u64() as usize;
            }
            if num == nr::REPLY && r.below(4) != 0 {
                raw[1] = 0;
            }
        }
        nr::CREATE_THREAD => {
            raw[1] = if r.below(3) == 0 {
                slot_arg(r)
            } else {
                adv_slots::CONTROL
            };
            raw[2] = slot_arg(r);
            raw[3] = if r.below(3) == 0 {
                slot_arg(r)
            } else {
                adv_slots::ASPACE
            };
            raw[4] = small(r);
            raw[5] = if r.below(4) == 0 {
                small(r)
            } else {
                r.below(cores as u64) as usize
            };
        }
        nr::SET_PRIORITY | nr::SET_AFFINITY => {
            raw[2] = if num == nr::SET_AFFINITY && r.below(3) != 0 {
                r.below(cores as u64) as usize
            } else {
                small(r)
            };
        }
        nr::BIND_PAGER | nr::BIND_IRQ => raw[2] = slot_arg(r),
        nr::MAP_PAGE => {
            raw[1] = if r.below(2) == 0 {
                adv_slots::ASPACE
            } else {
                raw[1]
            };
            raw[2] = if r.below(2) == 0 {
                adv_slots::MEM
            } else {
                slot_arg(r)
            };
            raw[3] = if r.below(8) == 0 {
                r.next_u64() as usize
            } else {
                0x10_0000 + 4096 * r.below(80) as usize
            };
            raw[4] = small(r) % 9;
            raw[5] = small(r) % 70;
        }
        nr::MEM_SPLIT | nr::MEM_MERGE | nr::MEM_REVOKE | nr::MEM_INFO => {
            let mem_slot = |r: &mut XorShift| match r.below(3) {
                0 => adv_slots::MEM,
                1 => adv_slots::FREE + r.below(8) as usize,
                _ => slot_arg(r),
            };
            raw[1] = mem_slot(r);
            if num == nr::MEM_SPLIT {
                raw[2] = adv_slots::FREE + r.below(8) as usize;
                raw[3] = small(r) % 70;
                raw[4] = small(r) % 20;
            } else if num == nr::MEM_MERGE {
                raw[2] = mem_slot(r);
            }
        }
        nr::CREATE_ENDPOINT | nr::CREATE_NOTIFICATION => {
            if r.below(3) != 0 {
                raw[1] = adv_slots::CONTROL;
            }
            raw[2] = adv_slots::SCRATCH + r.below(2) as usize;
        }
        nr::UNMAP_PAGE => {
            raw[1] = if r.below(2) == 0 {
                adv_slots::ASPACE
            } else {
                raw[1]
            };
            raw[2] = if r.below(8) == 0 {
                r.next_u64() as usize
            } else {
                0x10_0000 + 4096 * r.below(80) as usize
            };
        }
        nr::CAP_DELETE if r.below(8) != 0 => raw[1] = adv_slots::FREE + r.below(8) as usize,
        nr::MINT => {
            raw[2] = match r.below(4) {
                0 => slot_arg(r),
                _ => kernel::syscall::MINT_SELF,
            };
            raw[3] = if r.below(4) == 0 {
                slot_arg(r)
            } else {
                adv_slots::FREE + r.below(8) as usize
            };
            raw[4] = small(r) % 20;
            raw[5] = if r.below(2) == 0 {
                0
            } else {
                r.next_u64() as usize
            };
        }
        _ => {
            // Occasionally garbage in registers that must be zero.
            if r.below(10) == 0 {
                raw[2 + r.below(4) as usize] = r.next_u64() as usize;
            }
        }
    }
    raw
}

/// The adversarial mix: `n_adv` adversaries (priority 31, the maximum, so nothing can starve
/// them) on all cores, each making `calls` random or malformed system calls. They hold the
/// capabilities listed in [`adv_slots`]; a pump thread keeps doing NBSend on the pump endpoint
/// and Signal on the notification, and a sink thread serves the sink endpoint, so that no
/// adversary stays blocked for good. Victim threads (yielding at priority 5) may be suspended,
/// moved, re-prioritised or deleted by the adversaries; new threads may be created.
pub fn adversarial<S: Strategy>(
    k: &mut Kernel<S, FakeHal>,
    programs: &Programs,
    n_adv: usize,
    calls: u64,
    seed: u64,
) -> Arc<Outcomes> {
    use adv_slots::*;
    let cores = k.cores();
    let out = Arc::new(Outcomes::new());
    let pump_ep = k.create_endpoint().unwrap();
    let sink_ep = k.create_endpoint().unwrap();
    let n = k.create_notification().unwrap();
    let a = k.create_address_space(0xA5_0000).unwrap();
    let f = k
        .create_memory(0xF0_0000, 64, kernel::MemKind::Ram)
        .unwrap();
    let mut victims = vec![];
    for i in 0..6 {
        let v = k.create_thread(5, i % cores, Some(a)).unwrap();
        k.start(v).unwrap();
        victims.push(v);
    }
    let pump = k.create_thread(31, 0, Some(a)).unwrap();
    k.install_cap(pump, slot(0), ObjRef::Endpoint(pump_ep), Rights::WRITE, 7)
        .unwrap();
    k.install_cap(pump, slot(1), ObjRef::Notification(n), Rights::WRITE, 2)
        .unwrap();
    let mut flip = false;
    programs.set(pump, false, move |_: &kernel::Regs| {
        flip = !flip;
        Some(
            if flip {
                Syscall::NBSend {
                    ep: slot(0),
                    msg: [1, 2, 3, 4],
                }
            } else {
                Syscall::Signal { ntfn: slot(1) }
            }
            .encode(),
        )
    });
    k.start(pump).unwrap();
    for c in 0..cores {
        let sink = k.create_thread(31, c, Some(a)).unwrap();
        k.install_cap(sink, slot(0), ObjRef::Endpoint(sink_ep), Rights::READ, 0)
            .unwrap();
        programs.set(sink, false, move |_: &kernel::Regs| {
            Some(
                Syscall::ReplyRecv {
                    ep: slot(0),
                    msg: [0; 4],
                }
                .encode(),
            )
        });
        k.start(sink).unwrap();
    }
    let mut advs = vec![];
    for i in 0..n_adv {
        advs.push(k.create_thread(31, i % cores, Some(a)).unwrap());
    }
    for (i, &t) in advs.iter().enumerate() {
        let caps = [
            (PUMP, ObjRef::Endpoint(pump_ep), Rights::READ),
            (SINK, ObjRef::Endpoint(sink_ep), Rights::WRITE),
            (NTFN, ObjRef::Notification(n), Rights::READ | Rights::WRITE),
            (
                VICTIM,
                ObjRef::Thread(victims[i % victims.len()]),
                Rights::MANAGE | Rights::GRANT,
            ),
            (
                PEER,
                ObjRef::Thread(advs[(i + 1) % advs.len()]),
                Rights::READ | Rights::GRANT,
            ),
            (
                MEM,
                ObjRef::Memory(f),
                Rights::READ | Rights::WRITE | Rights::GRANT | Rights::MANAGE,
            ),
            (ASPACE, ObjRef::AddressSpace(a), Rights::WRITE),
            (
                IRQ,
                ObjRef::IrqHandler(kernel::IrqId::new(i % 4).unwrap()),
                Rights::ALL,
            ),
            (CONTROL, ObjRef::Control, Rights::MANAGE),
            (
                SINK_GRANT,
                ObjRef::Endpoint(sink_ep),
                Rights::WRITE | Rights::GRANT,
            ),
        ];
        for (s, obj, rights) in caps {
            k.install_cap(t, slot(s), obj, rights, i + 1).unwrap();
        }
        let mut r = XorShift::new(seed.wrapping_mul(i as u64 + 1) ^ 0x1234_5678);
        let mut left = calls;
        let o = out.clone();
        let mut started = false;
        programs.set(t, true, move |ret: &kernel::Regs| {
            if started {
                let code = ret[0].min(31);
                o.codes[code].fetch_add(1, Relaxed);
                o.calls.fetch_add(1, Relaxed);
            }
            started = true;
            left = left.checked_sub(1)?;
            Some(random_call(&mut r, cores))
        });
        k.start(t).unwrap();
    }
    let _ = MintTarget::Own;
    out
}
