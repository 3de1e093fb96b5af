//! Unit tests of the kernel core, run single-threaded: one host thread plays every core in
//! turn, so each test is a deterministic sequence of kernel entries.

use std::sync::Mutex;
use std::vec::Vec;

use kernel_locks::TicketLock;

use crate::cap::{ObjRef, Rights};
use crate::config::*;
use crate::error::Error;
use crate::hal::{Hal, IpiKind, Leaf, MapPrepError, MapTag, PageAttrs, PhysAddr, SweepAction};
use crate::hosted::PageTables;
use crate::ids::*;
use crate::kernel::{Exit, Kernel, Life, ThreadState, EXCEPTION_LABEL, FAULT_LABEL};
use crate::mem::MemKind;
use crate::strategy::{BigLock, FineGrained};
use crate::syscall::{self, nr, MintTarget, Syscall};
use kernel_locks::CpuId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Ipi(CpuId, CpuId, IpiKind),
    Switch(CpuId, PhysAddr),
    Flush(CpuId, PhysAddr, Option<usize>),
    Map(PhysAddr, usize, PhysAddr, PageAttrs),
    Unmap(PhysAddr, usize),
    Sweep(PhysAddr, usize),
    Mask(IrqId),
    Unmask(IrqId),
    Route(IrqId, CpuId),
    SetEntry(ThreadId, usize, usize, usize),
}

struct RecHal {
    log: Mutex<Vec<Ev>>,
    /// The page tables (a pool of 64 table frames).
    pt: PageTables,
    /// What `prepare_map` returns (injected failure), `None` for success.
    prep_fail: Mutex<Option<MapPrepError>>,
    /// The `(root, vaddr)` of every `prepare_map` call (not in `log`, which tests compare).
    prepared: Mutex<Vec<(PhysAddr, usize)>>,
    /// The cycle counter: advances by `clock_step` at every read.
    clock: std::sync::atomic::AtomicU64,
    /// What a read adds to `clock` (1; 0 for a counter that stands still).
    clock_step: std::sync::atomic::AtomicU64,
}

impl Default for RecHal {
    fn default() -> Self {
        Self {
            log: Mutex::default(),
            pt: PageTables::new(64),
            prep_fail: Mutex::default(),
            prepared: Mutex::default(),
            clock: std::sync::atomic::AtomicU64::new(0),
            clock_step: std::sync::atomic::AtomicU64::new(1),
        }
    }
}

impl RecHal {
    fn take(&self) -> Vec<Ev> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
    fn push(&self, e: Ev) {
        self.log.lock().unwrap().push(e);
    }
}

impl Hal for RecHal {
    fn cpu_id(&self) -> CpuId {
        0
    }
    fn cpu_count(&self) -> usize {
        MAX_CPUS
    }
    fn send_ipi(&self, cpu: CpuId, target: CpuId, kind: IpiKind) {
        self.push(Ev::Ipi(cpu, target, kind));
    }
    unsafe fn switch_address_space(&self, cpu: CpuId, root: PhysAddr) {
        self.push(Ev::Switch(cpu, root));
    }
    fn flush_tlb(&self, cpu: CpuId, root: PhysAddr, vaddr: Option<usize>) {
        self.push(Ev::Flush(cpu, root, vaddr));
    }
    fn prepare_map(&self, root: PhysAddr, vaddr: usize) -> Result<(), MapPrepError> {
        self.prepared.lock().unwrap().push((root, vaddr));
        match *self.prep_fail.lock().unwrap() {
            Some(e) => Err(e),
            None => self.pt.prepare_map(root, vaddr),
        }
    }
    fn map_page(
        &self,
        root: PhysAddr,
        vaddr: usize,
        frame: PhysAddr,
        attrs: PageAttrs,
        tag: MapTag,
    ) {
        self.pt.map_page(root, vaddr, frame, attrs, tag);
        self.push(Ev::Map(root, vaddr, frame, attrs));
    }
    fn lookup(&self, root: PhysAddr, vaddr: usize) -> Option<Leaf> {
        self.pt.lookup(root, vaddr)
    }
    fn unmap_page(&self, cpu: CpuId, root: PhysAddr, vaddr: usize) {
        self.pt.unmap_page(cpu, root, vaddr);
        self.push(Ev::Unmap(root, vaddr));
    }
    fn sweep(&self, cpu: CpuId, root: PhysAddr, f: &mut dyn FnMut(&Leaf) -> SweepAction) -> usize {
        let n = self.pt.sweep(cpu, root, f);
        if n > 0 {
            self.push(Ev::Sweep(root, n));
        }
        n
    }
    fn reclaim_tables(&self, cpu: CpuId) {
        self.pt.reclaim_tables(cpu);
    }
    fn table_frames(&self) -> (usize, usize) {
        self.pt.table_frames()
    }
    fn set_entry(&self, thread: ThreadId, pc: usize, sp: usize, arg: usize) {
        self.push(Ev::SetEntry(thread, pc, sp, arg));
    }
    fn relax(&self, _cpu: CpuId) {
        std::thread::yield_now();
    }
    fn mask_irq(&self, _cpu: CpuId, irq: IrqId) {
        self.push(Ev::Mask(irq));
    }
    fn unmask_irq(&self, _cpu: CpuId, irq: IrqId) {
        self.push(Ev::Unmask(irq));
    }
    fn irq_line_available(&self, irq: IrqId) -> bool {
        // Lines 1..64 exist; 0 is the kernel's own (as the timer is on real machines).
        (1..64).contains(&irq.index())
    }
    fn route_irq(&self, _cpu: CpuId, irq: IrqId, target: CpuId) {
        self.push(Ev::Route(irq, target));
    }
    fn cycles(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        self.clock.fetch_add(self.clock_step.load(Relaxed), Relaxed)
    }
    fn console_write(&self, _s: &str) {}
}

type K = Kernel<BigLock<TicketLock>, RecHal>;

fn kernel(cores: usize) -> Box<K> {
    Box::new(Kernel::new(
        BigLock::new(TicketLock::new()),
        RecHal::default(),
        cores,
    ))
}

/// A kernel refuses a strategy built for fewer cores than it has: its entries skip the
/// strategy's own range checks (`Strategy::enter_unchecked`) because of this.
#[test]
#[should_panic(expected = "kernel: 3 cores, but the ticket strategy was built for 2")]
fn kernel_refuses_a_strategy_for_fewer_cores() {
    let _ = Kernel::new(BigLock::new(TicketLock::with_cpus(2)), RecHal::default(), 3);
}

/// A `Call` (the IPC entry's call) on a core outside the kernel's count is refused as any
/// entry is: the IPC entry's one compare (`ipc_cores`) sends it to the generic entry, whose
/// core check panics.
#[test]
#[should_panic(expected = "kernel entry on CPU 2 of 2 (HAL bug)")]
fn ipc_entry_on_a_core_outside_the_count_panics() {
    let k = kernel(2);
    let _ = k.syscall(
        2,
        Syscall::Call {
            ep: s(0),
            msg: [0; 4],
        }
        .encode(),
    );
}

/// Runs `f` (which plays the other cores) while a host thread plays core `remote`: it enters
/// the kernel through `Kernel::ipi` whenever a TLB shoot-down is pending for it, as a real core
/// takes the IPI. Needed because a shoot-down waits for the target's acknowledgement.
fn with_remote<R>(k: &K, remote: CpuId, f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !done.load(SeqCst) {
                if k.shootdown_pending(remote) {
                    k.ipi(remote, IpiKind::TlbShootdown);
                } else {
                    std::thread::yield_now();
                }
            }
        });
        let r = f();
        done.store(true, SeqCst);
        r
    })
}

/// `MapPage` of the memory in slot 1 at 0x4000 of the address space in slot 0, no attributes.
fn map_first_page() -> Syscall {
    Syscall::MapPage {
        aspace: s(0),
        mem: s(1),
        vaddr: 0x4000,
        attrs: PageAttrs::empty(),
        offset: 0,
    }
}

/// `UnmapPage` of 0x4000 in the address space in slot 0 (undoes [`map_first_page`]).
fn unmap_first_page() -> Syscall {
    Syscall::UnmapPage {
        aspace: s(0),
        vaddr: 0x4000,
    }
}

fn s(i: usize) -> CapSlot {
    CapSlot::new(i).unwrap()
}

fn call(k: &K, cpu: CpuId, sc: Syscall) -> Exit {
    k.syscall(cpu, sc.encode())
}

fn ok(e: &Exit) -> (usize, syscall::Msg) {
    syscall::result(&e.regs).expect("call failed")
}

fn err(e: &Exit) -> Error {
    syscall::result(&e.regs).expect_err("call succeeded")
}

/// Kernel with `n` threads (priority 10) on the given cores, all started, an endpoint (slot
/// 0: READ|WRITE|GRANT, badge = thread index + 1) and a notification (slot 1) for each.
fn setup(cores: usize, on: &[CpuId]) -> (Box<K>, Vec<ThreadId>, EndpointId, NotificationId) {
    let mut k = kernel(cores);
    let ep = k.create_endpoint().unwrap();
    let n = k.create_notification().unwrap();
    let mut ts = Vec::new();
    for &c in on {
        let t = k.create_thread(10, c, None).unwrap();
        let rw = Rights::READ | Rights::WRITE | Rights::GRANT;
        k.install_cap(t, s(0), ObjRef::Endpoint(ep), rw, t.index() + 1)
            .unwrap();
        k.install_cap(t, s(1), ObjRef::Notification(n), rw, 1 << t.index())
            .unwrap();
        k.start(t).unwrap();
        ts.push(t);
    }
    (k, ts, ep, n)
}

#[test]
fn decode_rejects_garbage_and_roundtrips() {
    assert_eq!(Syscall::decode(&[0; 6]), Err(Error::UnknownSyscall));
    assert_eq!(
        Syscall::decode(&[999, 0, 0, 0, 0, 0]),
        Err(Error::UnknownSyscall)
    );
    assert_eq!(
        Syscall::decode(&[nr::RECV, 99, 0, 0, 0, 0]),
        Err(Error::OutOfRange)
    );
    assert_eq!(
        Syscall::decode(&[nr::RECV, 1, 5, 0, 0, 0]),
        Err(Error::InvalidArgument)
    );
    assert_eq!(
        Syscall::decode(&[nr::YIELD, 0, 0, 0, 0, 1]),
        Err(Error::InvalidArgument)
    );
    assert_eq!(
        Syscall::decode(&[nr::SET_PRIORITY, 1, NUM_PRIOS, 0, 0, 0]),
        Err(Error::OutOfRange)
    );
    assert_eq!(
        Syscall::decode(&[nr::MAP_PAGE, 1, 2, 4097, 1, 0]),
        Err(Error::InvalidArgument)
    );
    assert_eq!(
        Syscall::decode(&[nr::MAP_PAGE, 1, 2, usize::MAX & !4095, 1, 0]),
        Err(Error::OutOfRange)
    );
    // Writable and executable at once; executable device memory; unknown attribute bits.
    for (attrs, e) in [
        (3, Error::InvalidArgument),
        (6, Error::InvalidArgument),
        (8, Error::OutOfRange),
        (usize::MAX, Error::OutOfRange),
    ] {
        assert_eq!(
            Syscall::decode(&[nr::MAP_PAGE, 1, 2, 4096, attrs, 0]),
            Err(e),
            "attrs {attrs}"
        );
    }
    assert_eq!(
        Syscall::decode(&[nr::MEM_SPLIT, 1, 2, 0, 0, 0]),
        Err(Error::InvalidArgument),
        "an empty split"
    );
    assert_eq!(
        Syscall::decode(&[nr::KERNEL_INFO, 99, 0, 0, 0, 0]),
        Err(Error::OutOfRange)
    );
    assert_eq!(
        Syscall::decode(&[nr::MINT, 1, 2, 3, 99, 0]),
        Err(Error::OutOfRange)
    );
    let calls = [
        Syscall::Call {
            ep: s(3),
            msg: [1, 2, 3, usize::MAX],
        },
        Syscall::ReplyRecv {
            ep: s(31),
            msg: [4; 4],
        },
        Syscall::Reply { msg: [5; 4] },
        Syscall::Yield,
        Syscall::CreateThread {
            control: s(1),
            dest: s(2),
            aspace: s(3),
            priority: 31,
            core: 7,
        },
        Syscall::MapPage {
            aspace: s(1),
            mem: s(2),
            vaddr: 0x1000,
            attrs: PageAttrs::WRITE,
            offset: 7,
        },
        Syscall::MemSplit {
            mem: s(1),
            dest: s(2),
            offset: 3,
            pages: 4,
        },
        Syscall::MemMerge { a: s(1), b: s(2) },
        Syscall::MemRevoke { mem: s(3) },
        Syscall::MemInfo { mem: s(3) },
        Syscall::CreateEndpoint {
            control: s(0),
            dest: s(9),
        },
        Syscall::CreateNotification {
            control: s(0),
            dest: s(9),
        },
        Syscall::KernelInfo { key: 2 },
        Syscall::Mint {
            src: s(0),
            target: MintTarget::Own,
            dest: s(5),
            rights: Rights::READ,
            badge: 7,
        },
        Syscall::Mint {
            src: s(0),
            target: MintTarget::Thread(s(4)),
            dest: s(5),
            rights: Rights::NONE,
            badge: 0,
        },
        Syscall::DeleteThread { thread: s(9) },
    ];
    for c in calls {
        assert_eq!(Syscall::decode(&c.encode()), Ok(c));
    }
    // Every word pattern decodes or errs without panicking.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let raw = [
            (x % 32) as usize,
            (x >> 8) as usize % 40,
            (x >> 16) as usize % 5,
            x as usize,
            0,
            (x >> 3) as usize % 3,
        ];
        if let Ok(sc) = Syscall::decode(&raw) {
            assert_eq!(Syscall::decode(&sc.encode()), Ok(sc));
        }
    }
}

#[test]
fn capability_lookups_return_typed_errors() {
    let (k, ts, _, _) = setup(1, &[0]);
    let e = k.timer_tick(0);
    assert_eq!(e.thread, Some(ts[0]));
    assert_eq!(
        err(&call(
            &k,
            0,
            Syscall::Send {
                ep: s(7),
                msg: [0; 4]
            }
        )),
        Error::InvalidCap
    );
    assert_eq!(
        err(&call(
            &k,
            0,
            Syscall::Send {
                ep: s(1),
                msg: [0; 4]
            }
        )),
        Error::WrongType
    );
    assert_eq!(
        err(&call(&k, 0, Syscall::Resume { thread: s(0) })),
        Error::WrongType
    );
    assert_eq!(
        err(&k.syscall(0, [nr::SEND, 400, 0, 0, 0, 0])),
        Error::OutOfRange
    );
    // A read-only copy cannot send; a copy cannot gain rights.
    let mint = Syscall::Mint {
        src: s(0),
        target: MintTarget::Own,
        dest: s(2),
        rights: Rights::READ,
        badge: 0,
    };
    ok(&call(&k, 0, mint));
    assert_eq!(
        err(&call(
            &k,
            0,
            Syscall::Send {
                ep: s(2),
                msg: [0; 4]
            }
        )),
        Error::MissingRight
    );
    let up = Syscall::Mint {
        src: s(2),
        target: MintTarget::Own,
        dest: s(3),
        rights: Rights::READ,
        badge: 0,
    };
    assert_eq!(
        err(&call(&k, 0, up)),
        Error::MissingRight,
        "no GRANT on the copy"
    );
    assert_eq!(err(&call(&k, 0, mint)), Error::SlotOccupied);
    ok(&call(&k, 0, Syscall::CapDelete { slot: s(2) }));
    assert_eq!(
        err(&call(&k, 0, Syscall::CapDelete { slot: s(2) })),
        Error::InvalidCap
    );
    assert_eq!(
        err(&call(&k, 0, Syscall::Reply { msg: [0; 4] })),
        Error::NoReply
    );
    let mut k = k;
    k.check_invariants().unwrap();
}

#[test]
fn call_and_reply_transfer_message_badge_and_reply_capability() {
    let (mut k, ts, _, _) = setup(1, &[0, 0]);
    let (server, client) = (ts[0], ts[1]);
    assert_eq!(k.timer_tick(0).thread, Some(server));
    let e = call(&k, 0, Syscall::Recv { ep: s(0) });
    assert_eq!(e.thread, Some(client), "server blocked, client runs");
    let e = call(
        &k,
        0,
        Syscall::Call {
            ep: s(0),
            msg: [1, 2, 3, 4],
        },
    );
    assert_eq!(e.thread, Some(server));
    assert_eq!(
        ok(&e),
        (client.index() + 1, [1, 2, 3, 4]),
        "badge and message"
    );
    assert_eq!(
        k.thread_state(client),
        (Life::Alive, ThreadState::BlockedReply)
    );
    k.check_invariants().unwrap();
    let e = call(
        &k,
        0,
        Syscall::ReplyRecv {
            ep: s(0),
            msg: [9, 8, 7, 6],
        },
    );
    assert_eq!(e.thread, Some(client));
    assert_eq!(ok(&e), (0, [9, 8, 7, 6]));
    assert_eq!(
        k.thread_state(server).1,
        ThreadState::BlockedRecv(EndpointId::new(0).unwrap())
    );
    k.check_invariants().unwrap();
}

/// Under `NoLock` every section is "exclusive" (no object locks), but other cores run their
/// own sections at the same time: a shared call must not read other cores' scheduling state
/// (`current_anywhere`), or it races with their writes. Its debug assertion catches a shared
/// section that does, e.g. `wake` from a Call.
#[test]
fn no_lock_shared_sections_only_touch_their_own_core() {
    use crate::strategy::{NoLock, Strategy};
    // SAFETY: one test thread drives the kernel: sections never overlap.
    let nl = unsafe { NoLock::new() };
    assert!(!nl.serialises());
    assert!(kernel(1).strategy().serialises());
    assert!(!FineGrained::<kernel_locks::Spin>::new().serialises());
    let mut k = Box::new(Kernel::new(nl, RecHal::default(), 2));
    let ep = k.create_endpoint().unwrap();
    let rw = Rights::READ | Rights::WRITE | Rights::GRANT;
    let server = k.create_thread(10, 1, None).unwrap();
    let client = k.create_thread(10, 1, None).unwrap();
    for t in [server, client] {
        k.install_cap(t, s(0), ObjRef::Endpoint(ep), rw, t.index() + 1)
            .unwrap();
        k.start(t).unwrap();
    }
    assert_eq!(k.timer_tick(1).thread, Some(server));
    let e = k.syscall(1, Syscall::Recv { ep: s(0) }.encode());
    assert_eq!(e.thread, Some(client));
    // The Call wakes the server (a shared section): checks core 1 only.
    let e = k.syscall(
        1,
        Syscall::Call {
            ep: s(0),
            msg: [1, 2, 3, 4],
        }
        .encode(),
    );
    assert_eq!(e.thread, Some(server));
    assert_eq!(ok(&e), (client.index() + 1, [1, 2, 3, 4]));
    let e = k.syscall(
        1,
        Syscall::ReplyRecv {
            ep: s(0),
            msg: [5; 4],
        }
        .encode(),
    );
    assert_eq!(e.thread, Some(client));
    assert_eq!(ok(&e), (0, [5; 4]));
    k.check_invariants().unwrap();
}

#[test]
fn send_blocks_until_receive_in_both_orders() {
    let (mut k, ts, ep, _) = setup(1, &[0, 0]);
    let (a, b) = (ts[0], ts[1]);
    assert_eq!(k.timer_tick(0).thread, Some(a));
    // Send first: a blocks, b receives and a is made ready again.
    let e = call(
        &k,
        0,
        Syscall::Send {
            ep: s(0),
            msg: [5; 4],
        },
    );
    assert_eq!(e.thread, Some(b));
    assert_eq!(k.thread_state(a).1, ThreadState::BlockedSend(ep));
    let e = call(&k, 0, Syscall::Recv { ep: s(0) });
    assert_eq!(e.thread, Some(b), "receiver continues");
    assert_eq!(ok(&e), (a.index() + 1, [5; 4]));
    assert_eq!(k.thread_state(a).1, ThreadState::Runnable);
    // Receive first: b blocks, a sends and continues, b gets it.
    let e = call(&k, 0, Syscall::Recv { ep: s(0) });
    assert_eq!(e.thread, Some(a));
    let e = call(
        &k,
        0,
        Syscall::NBSend {
            ep: s(0),
            msg: [6; 4],
        },
    );
    assert_eq!(e.thread, Some(a));
    ok(&e);
    assert_eq!(
        syscall::result(&k.thread_regs(b)),
        Ok((a.index() + 1, [6; 4]))
    );
    // NBSend without a receiver is dropped.
    let e = call(&k, 0, Syscall::Yield);
    assert_eq!(e.thread, Some(b));
    let e = call(
        &k,
        0,
        Syscall::NBSend {
            ep: s(0),
            msg: [7; 4],
        },
    );
    ok(&e);
    assert_eq!(k.thread_state(b).1, ThreadState::Runnable);
    k.check_invariants().unwrap();
}

#[test]
fn notifications_accumulate_badges_and_wake_waiters() {
    let (mut k, ts, n, _) = setup(1, &[0, 0]);
    let _ = n;
    let (a, b) = (ts[0], ts[1]);
    assert_eq!(k.timer_tick(0).thread, Some(a));
    ok(&call(&k, 0, Syscall::Signal { ntfn: s(1) }));
    ok(&call(&k, 0, Syscall::Signal { ntfn: s(1) }));
    let e = call(&k, 0, Syscall::Wait { ntfn: s(1) });
    assert_eq!(ok(&e).0, 1 << a.index(), "word taken at once");
    let e = call(&k, 0, Syscall::Wait { ntfn: s(1) });
    assert_eq!(e.thread, Some(b), "a waits");
    let e = call(&k, 0, Syscall::Signal { ntfn: s(1) });
    assert_eq!(e.thread, Some(b));
    assert_eq!(
        syscall::result(&k.thread_regs(a)).unwrap().0,
        1 << b.index()
    );
    k.check_invariants().unwrap();
}

#[test]
fn higher_priority_preempts_and_yield_rotates_equal_priorities() {
    let mut k = kernel(1);
    let ep = k.create_endpoint().unwrap();
    let lo = k.create_thread(5, 0, None).unwrap();
    let lo2 = k.create_thread(5, 0, None).unwrap();
    let hi = k.create_thread(20, 0, None).unwrap();
    for t in [lo, lo2, hi] {
        k.install_cap(t, s(0), ObjRef::Endpoint(ep), Rights::ALL, 0)
            .unwrap();
    }
    k.start(hi).unwrap();
    k.start(lo).unwrap();
    k.start(lo2).unwrap();
    assert_eq!(k.timer_tick(0).thread, Some(hi));
    assert_eq!(call(&k, 0, Syscall::Recv { ep: s(0) }).thread, Some(lo));
    assert_eq!(call(&k, 0, Syscall::Yield).thread, Some(lo2));
    assert_eq!(k.timer_tick(0).thread, Some(lo), "timer rotates");
    // Waking the high-priority receiver preempts the sender.
    assert_eq!(
        call(
            &k,
            0,
            Syscall::Send {
                ep: s(0),
                msg: [1; 4]
            }
        )
        .thread,
        Some(hi)
    );
    let ready: Vec<_> = k.ready_of(0).collect();
    assert_eq!(ready, vec![lo2, lo]);
    k.check_invariants().unwrap();
}

#[test]
fn waking_a_thread_of_another_core_sends_a_reschedule_ipi() {
    let (mut k, ts, _, _) = setup(2, &[0, 1]);
    let (a, b) = (ts[0], ts[1]);
    assert_eq!(k.timer_tick(1).thread, Some(b));
    assert_eq!(
        call(&k, 1, Syscall::Recv { ep: s(0) }).thread,
        None,
        "core 1 idles"
    );
    k.hal.take();
    assert_eq!(k.timer_tick(0).thread, Some(a));
    ok(&call(
        &k,
        0,
        Syscall::Send {
            ep: s(0),
            msg: [3; 4],
        },
    ));
    assert_eq!(k.hal.take(), vec![Ev::Ipi(0, 1, IpiKind::Reschedule)]);
    assert_eq!(k.current_of(1), None);
    assert_eq!(k.ipi(1, IpiKind::Reschedule).thread, Some(b));
    k.check_invariants().unwrap();
}

#[test]
fn deleting_a_thread_running_on_another_core_kicks_it_off() {
    let mut k = kernel(2);
    let boss = k.create_thread(10, 0, None).unwrap();
    let victim = k.create_thread(10, 1, None).unwrap();
    let ep = k.create_endpoint().unwrap();
    k.install_cap(boss, s(0), ObjRef::Thread(victim), Rights::ALL, 0)
        .unwrap();
    k.install_cap(victim, s(0), ObjRef::Endpoint(ep), Rights::ALL, 0)
        .unwrap();
    k.install_cap(victim, s(1), ObjRef::Thread(victim), Rights::ALL, 0)
        .unwrap();
    k.start(boss).unwrap();
    k.start(victim).unwrap();
    assert_eq!(k.timer_tick(0).thread, Some(boss));
    assert_eq!(k.timer_tick(1).thread, Some(victim));
    k.hal.take();
    ok(&call(&k, 0, Syscall::DeleteThread { thread: s(0) }));
    assert_eq!(k.hal.take(), vec![Ev::Ipi(0, 1, IpiKind::Reschedule)]);
    assert_eq!(k.thread_state(victim).0, Life::Zombie);
    assert_eq!(k.cap_of(boss, s(0)), None, "capability revoked");
    assert_eq!(k.cap_of(victim, s(0)), None, "CSpace emptied");
    k.check_invariants().unwrap();
    // The victim's core enters (a syscall the victim made meanwhile): not executed.
    let e = call(
        &k,
        1,
        Syscall::Send {
            ep: s(0),
            msg: [0; 4],
        },
    );
    assert_eq!(e.thread, None);
    assert_eq!(k.current_of(1), None);
    // The slot is reused.
    let ctrl = Syscall::Yield;
    ok(&call(&k, 0, ctrl));
    let t = k.create_thread(1, 0, None).unwrap();
    assert_eq!(t, victim);
    k.check_invariants().unwrap();
}

#[test]
fn suspend_interrupts_a_blocked_call_and_resume_restarts() {
    let mut k = kernel(1);
    let boss = k.create_thread(20, 0, None).unwrap();
    let worker = k.create_thread(10, 0, None).unwrap();
    let ep = k.create_endpoint().unwrap();
    k.install_cap(boss, s(0), ObjRef::Thread(worker), Rights::MANAGE, 0)
        .unwrap();
    k.install_cap(worker, s(0), ObjRef::Endpoint(ep), Rights::ALL, 0)
        .unwrap();
    k.start(worker).unwrap();
    assert_eq!(k.timer_tick(0).thread, Some(worker));
    assert_eq!(
        call(
            &k,
            0,
            Syscall::Call {
                ep: s(0),
                msg: [0; 4]
            }
        )
        .thread,
        None
    );
    k.start(boss).unwrap();
    assert_eq!(k.timer_tick(0).thread, Some(boss));
    ok(&call(&k, 0, Syscall::Suspend { thread: s(0) }));
    assert_eq!(k.thread_state(worker).1, ThreadState::Inactive);
    assert_eq!(
        syscall::result(&k.thread_regs(worker)),
        Err(Error::Interrupted)
    );
    k.check_invariants().unwrap();
    ok(&call(&k, 0, Syscall::Resume { thread: s(0) }));
    let e = call(&k, 0, Syscall::Recv { ep: s(0) });
    assert_eq!(err(&e), Error::WrongType, "slot 0 is a thread capability");
    assert_eq!(e.thread, Some(boss));
    assert_eq!(k.ready_of(0).collect::<Vec<_>>(), vec![worker]);
    let e = k.timer_tick(0);
    assert_eq!(e.thread, Some(boss), "higher priority keeps the core");
    k.check_invariants().unwrap();
}

/// Two cores with a thread each in address space 0xA000; core 0's thread holds the address
/// space (slot 0, write right) and one RAM frame at 0x5000 (slot 1, read right).
fn two_cores_in_one_address_space() -> Box<K> {
    let mut k = kernel(2);
    let a = k.create_address_space(0xA000).unwrap();
    let f = k.create_memory(0x5000, 1, MemKind::Ram).unwrap();
    let t0 = k.create_thread(10, 0, Some(a)).unwrap();
    let t1 = k.create_thread(10, 1, Some(a)).unwrap();
    k.install_cap(t0, s(0), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(t0, s(1), ObjRef::Memory(f), Rights::READ, 0)
        .unwrap();
    k.start(t0).unwrap();
    k.start(t1).unwrap();
    k
}

#[test]
fn unmap_shoots_down_tlbs_of_cores_that_ran_the_address_space() {
    let mut k = two_cores_in_one_address_space();
    k.timer_tick(0);
    k.timer_tick(1);
    assert_eq!(
        k.hal.take(),
        vec![Ev::Switch(0, 0xA000), Ev::Switch(1, 0xA000)]
    );
    let map = |attrs| Syscall::MapPage {
        aspace: s(0),
        mem: s(1),
        vaddr: 0x4000,
        attrs,
        offset: 0,
    };
    assert_eq!(
        err(&call(&k, 0, map(PageAttrs::WRITE))),
        Error::MissingRight
    );
    ok(&call(&k, 0, map(PageAttrs::empty())));
    assert_eq!(
        err(&call(&k, 0, map(PageAttrs::empty()))),
        Error::AlreadyMapped
    );
    assert_eq!(
        k.hal.take(),
        vec![Ev::Map(0xA000, 0x4000, 0x5000, PageAttrs::empty())]
    );
    // Core 1 acknowledges from another host thread; the call returns only after its flush.
    with_remote(&k, 1, || ok(&call(&k, 0, unmap_first_page())));
    let log = k.hal.take();
    assert_eq!(log[0], Ev::Unmap(0xA000, 0x4000), "{log:?}");
    let mut rest = log[1..].to_vec();
    rest.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        rest,
        vec![
            Ev::Flush(0, 0xA000, Some(0x4000)),
            Ev::Flush(1, 0, None),
            Ev::Ipi(0, 1, IpiKind::TlbShootdown)
        ],
        "local flush, IPI and the remote flush, all before the call returned"
    );
    assert!(!k.shootdown_pending(1));
    assert_eq!(err(&call(&k, 0, unmap_first_page())), Error::NotMapped);
    // The IPI itself arrives later: already acknowledged, nothing left to flush.
    k.ipi(1, IpiKind::TlbShootdown);
    assert_eq!(k.hal.take(), vec![]);
    assert!(k.hal.pt.leaves(0xA000).is_empty());
    assert_eq!(
        k.hal.pt.table_frames(),
        (64, 64),
        "the emptied table was reclaimed"
    );
    k.check_invariants().unwrap();
}

/// Shoot-down generations are words that wrap (`TlbGeneration`): with core 1's counters two
/// requests short of wrapping, two unmaps still wait for core 1's flush each, the second
/// request skips 0 (the actions' "nothing to wait for") and gets 1, and nothing is left
/// pending. With `>`-comparisons instead of modular ones, the second wait would end
/// before the flush or never.
#[test]
fn shootdown_generations_wrap_past_zero() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut k = two_cores_in_one_address_space();
    k.tlb_req[1].store(usize::MAX - 1, Relaxed);
    k.tlb_ack[1].store(usize::MAX - 1, Relaxed);
    for (round, want) in [(1, usize::MAX), (2, 1)] {
        // Core 1 runs the address space again, so the unmap must shoot it down.
        k.timer_tick(0);
        k.timer_tick(1);
        ok(&call(&k, 0, map_first_page()));
        k.hal.take();
        with_remote(&k, 1, || ok(&call(&k, 0, unmap_first_page())));
        let log = k.hal.take();
        assert!(
            log.contains(&Ev::Flush(1, 0, None)),
            "round {round}: core 1 flushed before the unmap returned: {log:?}"
        );
        assert_eq!(
            (k.tlb_req[1].load(Relaxed), k.tlb_ack[1].load(Relaxed)),
            (want, want),
            "round {round}"
        );
        assert!(!k.shootdown_pending(1), "round {round}");
    }
    k.check_invariants().unwrap();
    // A generation acknowledged long ago (a deleted address space's) stays acknowledged far
    // beyond half a wrap; one a little ahead of the acknowledgement does not.
    use crate::kernel::reached;
    assert!(reached(5, 5) && reached(6, 5) && reached(1, usize::MAX));
    assert!(
        reached(5 + (usize::MAX / 2 + 10), 5),
        "more than half a wrap later"
    );
    assert!(
        !reached(5, 6) && !reached(usize::MAX, 1),
        "1 is 2 ahead of usize::MAX"
    );
}

/// A MapPage whose `prepare_map` fails (no memory for page tables, or an address the image
/// loader mapped) returns the error in the decode phase and changes nothing: no mapping-table
/// entry, no `map_page`, no flush. The same call succeeds once the HAL can prepare it.
#[test]
fn map_frame_fails_cleanly_when_the_hal_cannot_prepare_it() {
    let mut k = kernel(1);
    let a = k.create_address_space(0xA000).unwrap();
    let f = k.create_memory(0x5000, 1, MemKind::Ram).unwrap();
    let t0 = k.create_thread(10, 0, Some(a)).unwrap();
    k.install_cap(t0, s(0), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(t0, s(1), ObjRef::Memory(f), Rights::READ | Rights::WRITE, 0)
        .unwrap();
    k.start(t0).unwrap();
    k.timer_tick(0);
    k.hal.take();
    let map = Syscall::MapPage {
        aspace: s(0),
        mem: s(1),
        vaddr: 0x4000,
        attrs: PageAttrs::WRITE,
        offset: 0,
    };
    for (fail, want) in [
        (MapPrepError::OutOfMemory, Error::OutOfMemory),
        (MapPrepError::Occupied, Error::AlreadyMapped),
    ] {
        *k.hal.prep_fail.lock().unwrap() = Some(fail);
        assert_eq!(err(&call(&k, 0, map)), want);
        assert!(k.hal.pt.leaves(0xA000).is_empty(), "page tables unchanged");
        assert!(k.hal.take().is_empty(), "no map_page, flush or IPI");
        assert_eq!(
            std::mem::take(&mut *k.hal.prepared.lock().unwrap()),
            vec![(0xA000, 0x4000)]
        );
        k.check_invariants().unwrap();
    }
    *k.hal.prep_fail.lock().unwrap() = None;
    ok(&call(&k, 0, map));
    assert_eq!(
        k.hal.take(),
        vec![Ev::Map(0xA000, 0x4000, 0x5000, PageAttrs::WRITE)]
    );
    assert_eq!(k.hal.pt.leaves(0xA000).len(), 1);
    // A failing prepare is not even asked for a call that fails an earlier check.
    *k.hal.prep_fail.lock().unwrap() = Some(MapPrepError::OutOfMemory);
    k.hal.prepared.lock().unwrap().clear();
    assert_eq!(err(&call(&k, 0, map)), Error::AlreadyMapped);
    assert!(k.hal.prepared.lock().unwrap().is_empty());
    assert!(k.hal.take().is_empty());
    k.check_invariants().unwrap();
}

/// The highest canonical user page (`0x7FFF_FFFF_F000` on 64-bit) is never mappable: a
/// `syscall` in its last two bytes would return to the non-canonical `1 << 47`, which x86_64
/// cannot return to from ring 0 without faulting in the kernel.
#[test]
fn map_frame_rejects_the_highest_user_page() {
    let top_page = if usize::BITS >= 64 {
        (1usize << 47) - PAGE_SIZE
    } else {
        1usize << 31
    };
    assert_eq!(USER_TOP, top_page);
    assert_eq!(
        Syscall::decode(&[nr::MAP_PAGE, 1, 2, top_page, 0, 0]),
        Err(Error::OutOfRange)
    );
    let mut k = kernel(1);
    let a = k.create_address_space(0xA000).unwrap();
    let f = k.create_memory(0x5000, 1, MemKind::Ram).unwrap();
    let t0 = k.create_thread(10, 0, Some(a)).unwrap();
    k.install_cap(t0, s(0), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(t0, s(1), ObjRef::Memory(f), Rights::READ, 0)
        .unwrap();
    k.start(t0).unwrap();
    k.timer_tick(0);
    k.hal.take();
    let map = |vaddr| Syscall::MapPage {
        aspace: s(0),
        mem: s(1),
        vaddr,
        attrs: PageAttrs::empty(),
        offset: 0,
    };
    assert_eq!(err(&call(&k, 0, map(top_page))), Error::OutOfRange);
    assert!(k.hal.pt.leaves(0xA000).is_empty());
    assert!(k.hal.take().is_empty(), "nothing reached the HAL");
    ok(&call(&k, 0, map(top_page - PAGE_SIZE)));
    assert_eq!(
        k.hal.take(),
        vec![Ev::Map(
            0xA000,
            top_page - PAGE_SIZE,
            0x5000,
            PageAttrs::empty()
        )]
    );
    k.check_invariants().unwrap();
}

#[test]
fn interrupts_signal_the_bound_notification_until_acknowledged() {
    let mut k = kernel(1);
    let drv = k.create_thread(10, 0, None).unwrap();
    let n = k.create_notification().unwrap();
    let irq = IrqId::new(5).unwrap();
    k.install_cap(drv, s(0), ObjRef::IrqHandler(irq), Rights::ALL, 0)
        .unwrap();
    k.install_cap(drv, s(1), ObjRef::Notification(n), Rights::ALL, 0x20)
        .unwrap();
    k.start(drv).unwrap();
    k.timer_tick(0);
    ok(&call(
        &k,
        0,
        Syscall::BindIrq {
            handler: s(0),
            ntfn: s(1),
            core: 0,
        },
    ));
    assert_eq!(k.hal.take(), vec![Ev::Route(irq, 0)]);
    assert_eq!(
        err(&call(
            &k,
            0,
            Syscall::BindIrq {
                handler: s(0),
                ntfn: s(1),
                core: 0,
            }
        )),
        Error::AlreadyBound
    );
    assert_eq!(call(&k, 0, Syscall::Wait { ntfn: s(1) }).thread, None);
    k.hal.take();
    let e = k.interrupt(0, 5);
    assert_eq!(e.thread, Some(drv));
    assert_eq!(ok(&e).0, 0x20);
    // The HAL masked the line before the entry; the kernel queues nothing that could run
    // after a remote AckIrq's unmask.
    assert_eq!(k.hal.take(), vec![]);
    assert_eq!(k.irq_state(irq), (true, Some(n)));
    ok(&call(&k, 0, Syscall::AckIrq { handler: s(0) }));
    assert_eq!(k.hal.take(), vec![Ev::Unmask(irq)]);
    k.interrupt(0, 9999);
    k.check_invariants().unwrap();
}

#[test]
fn irq_handlers_are_issued_once_per_available_line_routed_and_returned() {
    let mut k = kernel(2);
    let drv = k.create_thread(10, 0, None).unwrap();
    let n = k.create_notification().unwrap();
    k.install_cap(drv, s(0), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    k.install_cap(drv, s(1), ObjRef::Notification(n), Rights::ALL, 7)
        .unwrap();
    k.install_cap(drv, s(2), ObjRef::Notification(n), Rights::READ, 7)
        .unwrap();
    k.start(drv).unwrap();
    k.timer_tick(0);
    let issue = |control: usize, irq: usize, dest: usize| Syscall::IssueIrqHandler {
        control: s(control),
        irq,
        dest: s(dest),
    };
    // Without MANAGE on a control capability, on a line the machine lacks or the kernel
    // uses, past MAX_IRQS (a decode error), or into an occupied slot: refused.
    assert_eq!(err(&call(&k, 0, issue(1, 5, 4))), Error::WrongType);
    assert_eq!(err(&call(&k, 0, issue(0, 0, 4))), Error::IrqUnavailable);
    assert_eq!(err(&call(&k, 0, issue(0, 64, 4))), Error::IrqUnavailable);
    assert_eq!(
        Syscall::decode(&issue(0, MAX_IRQS, 4).encode()),
        Err(Error::IrqUnavailable)
    );
    assert_eq!(err(&call(&k, 0, issue(0, 5, 1))), Error::SlotOccupied);
    ok(&call(&k, 0, issue(0, 5, 4)));
    // One handler per line: a second issue is refused while the first lives, even to a copy.
    assert_eq!(err(&call(&k, 0, issue(0, 5, 5))), Error::InUse);
    let irq = IrqId::new(5).unwrap();
    let bind = |core: usize, ntfn: usize| Syscall::BindIrq {
        handler: s(4),
        ntfn: s(ntfn),
        core,
    };
    assert_eq!(err(&call(&k, 0, bind(2, 1))), Error::InvalidCore);
    assert_eq!(err(&call(&k, 0, bind(1, 2))), Error::MissingRight);
    k.hal.take();
    ok(&call(&k, 0, bind(1, 1)));
    assert_eq!(k.hal.take(), vec![Ev::Route(irq, 1)]);
    assert_eq!(k.irq_state(irq), (false, Some(n)));
    // Deleting the last capability unbinds and masks the line; it can be issued again.
    ok(&call(&k, 0, Syscall::CapDelete { slot: s(4) }));
    assert_eq!(k.hal.take(), vec![Ev::Mask(irq)]);
    assert_eq!(k.irq_state(irq), (false, None));
    ok(&call(&k, 0, issue(0, 5, 4)));
    k.check_invariants().unwrap();
}

#[test]
fn a_tick_line_signals_at_its_cores_next_tick_once_per_acknowledgement() {
    use crate::config::TICK_IRQ_BASE;
    let mut k = kernel(2);
    let drv = k.create_thread(10, 0, None).unwrap();
    let n = k.create_notification().unwrap();
    k.install_cap(drv, s(0), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    k.install_cap(drv, s(1), ObjRef::Notification(n), Rights::ALL, 4)
        .unwrap();
    k.start(drv).unwrap();
    k.timer_tick(0);
    let issue = |irq: usize, dest: usize| Syscall::IssueIrqHandler {
        control: s(0),
        irq,
        dest: s(dest),
    };
    // A tick line per core the kernel runs, whatever the HAL says about lines that high.
    assert_eq!(
        err(&call(&k, 0, issue(TICK_IRQ_BASE + 2, 4))),
        Error::IrqUnavailable
    );
    ok(&call(&k, 0, issue(TICK_IRQ_BASE, 4)));
    let tick = IrqId::new(TICK_IRQ_BASE).unwrap();
    assert_eq!(tick.tick_core(), Some(0));
    assert_eq!(IrqId::new(5).unwrap().tick_core(), None);
    let bind = |core: usize| Syscall::BindIrq {
        handler: s(4),
        ntfn: s(1),
        core,
    };
    // Bound on its own core only, and nothing at the interrupt controller.
    assert_eq!(err(&call(&k, 0, bind(1))), Error::InvalidArgument);
    k.hal.take();
    ok(&call(&k, 0, bind(0)));
    assert_eq!(k.hal.take(), vec![]);
    // Another core's tick does not signal it; its own core's next tick does, once.
    k.timer_tick(1);
    assert_eq!(k.irq_state(tick), (false, Some(n)));
    k.timer_tick(0);
    assert_eq!(k.irq_state(tick), (true, Some(n)));
    let e = call(&k, 0, Syscall::Wait { ntfn: s(1) });
    assert_eq!(ok(&e).0, 4, "the tick's badge, at once");
    // Masked until acknowledged: the next tick passes by and Wait blocks.
    k.timer_tick(0);
    assert_eq!(call(&k, 0, Syscall::Wait { ntfn: s(1) }).thread, None);
    // Acknowledged (nothing at the controller): the next tick wakes the waiter.
    let other = k.create_thread(10, 0, None).unwrap();
    k.install_cap(other, s(0), ObjRef::IrqHandler(tick), Rights::WRITE, 0)
        .unwrap();
    k.start(other).unwrap();
    let e = k.timer_tick(0);
    assert_eq!(e.thread, Some(other));
    k.hal.take();
    ok(&call(&k, 0, Syscall::AckIrq { handler: s(0) }));
    assert_eq!(k.hal.take(), vec![]);
    assert_eq!(k.irq_state(tick), (false, Some(n)));
    let e = k.timer_tick(0);
    assert_eq!(e.thread, Some(drv), "the tick woke the waiter");
    assert_eq!(
        syscall::result(&k.thread_regs(drv)).unwrap().0,
        4,
        "with the tick's badge"
    );
    // Deleting a capability leaves the line bound while another one remains; deleting the
    // last unbinds it with nothing at the interrupt controller (a tick line is the kernel's
    // own), and the line can be issued again.
    ok(&call(&k, 0, Syscall::CapDelete { slot: s(4) }));
    assert_eq!(
        k.irq_state(tick),
        (true, Some(n)),
        "another capability remains"
    );
    assert_eq!(k.timer_tick(0).thread, Some(other), "the tick rotates");
    k.hal.take();
    ok(&call(&k, 0, Syscall::CapDelete { slot: s(0) }));
    assert_eq!(k.hal.take(), vec![], "no Mask for a tick line");
    assert_eq!(k.irq_state(tick), (false, None));
    assert_eq!(k.timer_tick(0).thread, Some(drv));
    ok(&call(&k, 0, issue(TICK_IRQ_BASE, 4)));
    k.check_invariants().unwrap();
}

/// A one-core kernel with a pager (priority 20) bound to an app (priority 10) and waiting on
/// its endpoint in slot 0; one more started thread per entry of `others` (their priorities),
/// created after the app. Returns the kernel, the pager, the app and the other threads.
fn pager_serving_app(others: &[usize]) -> (Box<K>, ThreadId, ThreadId, Vec<ThreadId>) {
    let mut k = kernel(1);
    let ep = k.create_endpoint().unwrap();
    let pager = k.create_thread(20, 0, None).unwrap();
    let app = k.create_thread(10, 0, None).unwrap();
    let others: Vec<ThreadId> = others
        .iter()
        .map(|&p| k.create_thread(p, 0, None).unwrap())
        .collect();
    k.install_cap(pager, s(0), ObjRef::Endpoint(ep), Rights::ALL, 0)
        .unwrap();
    k.install_cap(pager, s(1), ObjRef::Thread(app), Rights::ALL, 0)
        .unwrap();
    for &t in [pager, app].iter().chain(&others) {
        k.start(t).unwrap();
    }
    k.timer_tick(0);
    ok(&call(
        &k,
        0,
        Syscall::BindPager {
            thread: s(1),
            ep: s(0),
        },
    ));
    assert_eq!(call(&k, 0, Syscall::Recv { ep: s(0) }).thread, Some(app));
    (k, pager, app, others)
}

#[test]
fn page_fault_calls_the_pager_and_its_reply_restarts_the_thread() {
    let (mut k, pager, app, _) = pager_serving_app(&[]);
    let e = call(&k, 0, Syscall::Yield);
    let before = e.regs;
    let e = k.page_fault(0, 0x7000, true);
    assert_eq!(e.thread, Some(pager));
    assert_eq!(ok(&e).1, [FAULT_LABEL, 0x7000, 1, app.index()]);
    let e = call(
        &k,
        0,
        Syscall::ReplyRecv {
            ep: s(0),
            msg: [1; 4],
        },
    );
    assert_eq!(e.thread, Some(app));
    assert_eq!(e.regs, before, "registers untouched by the fault reply");
    k.check_invariants().unwrap();
}

#[test]
fn exceptions_go_to_the_pager_or_stop_the_thread() {
    let (mut k, pager, app, others) = pager_serving_app(&[10]);
    let lone = others[0];
    // With a pager: the exception becomes a Call to it.
    let e = k.exception(0, 6, 0x40_1000);
    assert_eq!(e.thread, Some(pager));
    assert_eq!(ok(&e).1, [EXCEPTION_LABEL, 6, 0x40_1000, app.index()]);
    // The pager waits again without replying: `lone` runs next, and faults without a pager.
    let e = call(&k, 0, Syscall::Recv { ep: s(0) });
    assert_eq!(e.thread, Some(lone));
    let e = k.exception(0, 0, 0x40_2000);
    assert_ne!(e.thread, Some(lone), "a thread without pager is stopped");
    let ctx = crate::kernel::Ctx {
        cpu: 0,
        excl: true,
        global: true,
        entry: false,
    };
    assert_eq!(
        k.ipc(&k.hold(ctx, lone), |i| i.state),
        ThreadState::Inactive
    );
    k.check_invariants().unwrap();
}

#[test]
fn recv_with_an_unanswered_reply_capability_drops_it() {
    let (mut k, ts, _, _) = setup(1, &[0, 0]);
    let (server, client) = (ts[0], ts[1]);
    k.timer_tick(0);
    call(&k, 0, Syscall::Recv { ep: s(0) });
    call(
        &k,
        0,
        Syscall::Call {
            ep: s(0),
            msg: [1; 4],
        },
    );
    // The server receives again without replying: the client gets ReplyDropped.
    let e = call(&k, 0, Syscall::Recv { ep: s(0) });
    assert_eq!(e.thread, Some(client));
    assert_eq!(err(&e), Error::ReplyDropped);
    assert_eq!(
        k.thread_state(server).1,
        ThreadState::BlockedRecv(EndpointId::new(0).unwrap())
    );
    k.check_invariants().unwrap();
}

#[test]
fn create_thread_needs_control_and_installs_a_capability() {
    let mut k = kernel(2);
    let a = k.create_address_space(0x1000).unwrap();
    let root = k.create_thread(10, 0, Some(a)).unwrap();
    k.install_cap(root, s(0), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    k.install_cap(root, s(1), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(root, s(2), ObjRef::AddressSpace(a), Rights::READ, 0)
        .unwrap();
    k.start(root).unwrap();
    k.timer_tick(0);
    let create = |aspace, core| Syscall::CreateThread {
        control: s(0),
        dest: s(5),
        aspace,
        priority: 12,
        core,
    };
    assert_eq!(err(&call(&k, 0, create(s(2), 1))), Error::MissingRight);
    assert_eq!(err(&call(&k, 0, create(s(1), 2))), Error::InvalidCore);
    assert_eq!(err(&call(&k, 0, create(s(5), 1))), Error::InvalidCap);
    let e = call(&k, 0, create(s(1), 1));
    let new = ThreadId::new(ok(&e).0).unwrap();
    assert_eq!(k.thread_state(new), (Life::Alive, ThreadState::Inactive));
    ok(&call(
        &k,
        0,
        Syscall::SetPriority {
            thread: s(5),
            priority: 3,
        },
    ));
    // No registers yet: Resume refuses it (the HAL would have nothing to run it with).
    assert_eq!(
        err(&call(&k, 0, Syscall::Resume { thread: s(5) })),
        Error::InvalidArgument
    );
    assert_eq!(k.thread_state(new), (Life::Alive, ThreadState::Inactive));
    ok(&call(
        &k,
        0,
        Syscall::WriteRegisters {
            thread: s(5),
            pc: 0x1000,
            sp: 0x2000,
            arg: 7,
        },
    ));
    ok(&call(&k, 0, Syscall::Resume { thread: s(5) }));
    assert_eq!(k.thread_sched(new), (3, 1));
    ok(&call(
        &k,
        0,
        Syscall::SetAffinity {
            thread: s(5),
            core: 0,
        },
    ));
    assert_eq!(k.ready_of(0).collect::<Vec<_>>(), vec![new]);
    assert_eq!(k.ready_of(1).count(), 0);
    ok(&call(
        &k,
        0,
        Syscall::SetAffinity {
            thread: s(5),
            core: 1,
        },
    ));
    assert_eq!(k.ready_of(1).collect::<Vec<_>>(), vec![new]);
    k.check_invariants().unwrap();
    // Moving oneself: the caller leaves this core at the end of the call.
    k.install_cap(root, s(6), ObjRef::Thread(root), Rights::MANAGE, 0)
        .unwrap();
    let e = call(
        &k,
        0,
        Syscall::SetAffinity {
            thread: s(6),
            core: 1,
        },
    );
    assert_eq!(e.thread, None);
    assert_eq!(k.ready_of(1).collect::<Vec<_>>(), vec![root, new]);
    k.check_invariants().unwrap();
}

#[test]
fn fine_grained_strategy_runs_the_same_state_machine() {
    let mut k = Box::new(Kernel::new(
        FineGrained::<kernel_locks::Spin>::new(),
        RecHal::default(),
        2,
    ));
    let ep = k.create_endpoint().unwrap();
    let a = k.create_thread(10, 0, None).unwrap();
    let b = k.create_thread(10, 1, None).unwrap();
    for t in [a, b] {
        k.install_cap(t, s(0), ObjRef::Endpoint(ep), Rights::ALL, t.index())
            .unwrap();
        k.start(t).unwrap();
    }
    k.timer_tick(0);
    k.timer_tick(1);
    assert_eq!(
        k.syscall(1, Syscall::Recv { ep: s(0) }.encode()).thread,
        None
    );
    let e = k.syscall(
        0,
        Syscall::Call {
            ep: s(0),
            msg: [1; 4],
        }
        .encode(),
    );
    assert_eq!(e.thread, None);
    let e = k.ipi(1, IpiKind::Reschedule);
    assert_eq!(e.thread, Some(b));
    let e = k.syscall(1, Syscall::Reply { msg: [2; 4] }.encode());
    assert_eq!(e.thread, Some(b));
    let e = k.ipi(0, IpiKind::Reschedule);
    assert_eq!(syscall::result(&e.regs), Ok((0, [2; 4])));
    k.check_invariants().unwrap();
}

/// A core keeps its `as_active` flag of an address space when it switches to another one
/// (a tagged TLB may still hold its entries), so unmaps there shoot it down; the whole-TLB
/// flush of that shoot-down clears its flags of every address space but the loaded one.
#[test]
fn a_core_keeps_the_flags_of_address_spaces_it_left_until_it_flushes_everything() {
    let mut k = kernel(2);
    let a = k.create_address_space(0xA000).unwrap();
    let b = k.create_address_space(0xB000).unwrap();
    let f = k.create_memory(0x5000, 1, MemKind::Ram).unwrap();
    let ta = k.create_thread(10, 1, Some(a)).unwrap();
    let tb = k.create_thread(10, 1, Some(b)).unwrap();
    // The unmapper, on core 0, in an address space of its own.
    let r = k.create_thread(10, 0, None).unwrap();
    k.install_cap(r, s(0), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(r, s(1), ObjRef::Memory(f), Rights::READ, 0)
        .unwrap();
    for t in [ta, tb, r] {
        k.start(t).unwrap();
    }
    k.timer_tick(0);
    assert_eq!(k.timer_tick(1).thread, Some(ta));
    assert_eq!(k.hal.take(), vec![Ev::Switch(1, 0xA000)]);
    assert_eq!((k.aspace_cores(a), k.aspace_cores(b)), (0b10, 0));
    assert_eq!(call(&k, 1, Syscall::Yield).thread, Some(tb));
    assert_eq!(k.hal.take(), vec![Ev::Switch(1, 0xB000)]);
    assert_eq!(
        (k.aspace_cores(a), k.aspace_cores(b)),
        (0b10, 0b10),
        "core 1 may still cache `a`"
    );
    let map = map_first_page();
    ok(&call(&k, 0, map));
    k.hal.take();
    // An unmap in `a`, which core 1 left: it is shot down and flushes everything.
    with_remote(&k, 1, || ok(&call(&k, 0, unmap_first_page())));
    let log = k.hal.take();
    assert!(
        log.contains(&Ev::Ipi(0, 1, IpiKind::TlbShootdown)),
        "{log:?}"
    );
    assert!(log.contains(&Ev::Flush(1, 0, None)), "{log:?}");
    assert_eq!(
        (k.aspace_cores(a), k.aspace_cores(b)),
        (0, 0b10),
        "after its whole-TLB flush core 1 caches only the loaded `b`"
    );
    // Another unmap in `a` no longer concerns core 1.
    ok(&call(&k, 0, map));
    k.hal.take();
    ok(&call(&k, 0, unmap_first_page()));
    let log = k.hal.take();
    assert!(
        !log.iter().any(|e| matches!(e, Ev::Ipi(..))),
        "no shoot-down of a core that flushed `a`: {log:?}"
    );
    k.check_invariants().unwrap();
}

/// DeleteAddressSpace: needs MANAGE; refused while a live (even suspended) thread is bound;
/// then removes mappings and capabilities, releases the tables, shoots down the core that ran
/// it (waiting for its flush, which also drops the zombie thread it ran); the slot is reused
/// by CreateAddressSpace, empty.
#[test]
fn deleting_an_address_space_waits_for_remote_flushes_and_frees_the_slot() {
    let mut k = kernel(2);
    let ra = k.create_address_space(0xA000).unwrap();
    let v = k.create_address_space(0xB000).unwrap();
    let f = k.create_memory(0x5000, 1, MemKind::Ram).unwrap();
    let r = k.create_thread(10, 0, Some(ra)).unwrap();
    let tv = k.create_thread(10, 1, Some(v)).unwrap();
    let m = Rights::MANAGE | Rights::WRITE;
    k.install_cap(r, s(0), ObjRef::AddressSpace(v), m, 0)
        .unwrap();
    k.install_cap(r, s(1), ObjRef::Memory(f), Rights::READ, 0)
        .unwrap();
    k.install_cap(r, s(2), ObjRef::Thread(tv), Rights::ALL, 0)
        .unwrap();
    k.install_cap(r, s(3), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    k.install_cap(r, s(4), ObjRef::AddressSpace(v), Rights::WRITE, 0)
        .unwrap();
    k.start(r).unwrap();
    k.start(tv).unwrap();
    k.timer_tick(0);
    k.timer_tick(1);
    let map = map_first_page();
    ok(&call(&k, 0, map));
    k.hal.take();
    let del = |slot| Syscall::DeleteAddressSpace { aspace: s(slot) };
    assert_eq!(err(&call(&k, 0, del(4))), Error::MissingRight);
    assert_eq!(err(&call(&k, 0, del(0))), Error::InUse);
    ok(&call(&k, 0, Syscall::Suspend { thread: s(2) }));
    assert_eq!(
        err(&call(&k, 0, del(0))),
        Error::InUse,
        "suspended threads count"
    );
    let create = Syscall::CreateAddressSpace {
        control: s(3),
        dest: s(5),
    };
    assert_eq!(err(&call(&k, 0, create)), Error::NoFreeObject);
    // Delete the thread: a zombie that core 1 still runs (its Reschedule IPI not taken yet).
    ok(&call(&k, 0, Syscall::DeleteThread { thread: s(2) }));
    assert_eq!(k.current_of(1), Some(tv));
    assert_eq!(k.aspace_cores(v), 2, "core 1 loaded it");
    k.hal.take();
    with_remote(&k, 1, || ok(&call(&k, 0, del(0))));
    let log = k.hal.take();
    assert_eq!(log[..1], [Ev::Sweep(0xB000, 1)], "{log:?}");
    assert!(
        log.contains(&Ev::Ipi(0, 1, IpiKind::TlbShootdown)),
        "{log:?}"
    );
    assert!(
        log.contains(&Ev::Flush(1, 0, None)),
        "core 1 flushed before the call returned: {log:?}"
    );
    assert_eq!(
        k.current_of(1),
        None,
        "the acknowledging entry dropped the zombie"
    );
    assert_eq!(k.cap_of(r, s(0)), None);
    assert_eq!(k.cap_of(r, s(4)), None);
    assert!(k.hal.pt.leaves(0xB000).is_empty());
    assert_eq!(err(&call(&k, 0, map)), Error::InvalidCap);
    assert_eq!(err(&call(&k, 0, del(0))), Error::InvalidCap);
    k.check_invariants().unwrap();
    // The slot is reusable: same index, same (reset) root, empty, all rights.
    let (idx, _) = ok(&call(&k, 0, create));
    assert_eq!(idx, v.index());
    assert_eq!(
        k.cap_of(r, s(5)).map(|c| c.obj),
        Some(ObjRef::AddressSpace(v))
    );
    let create6 = Syscall::CreateAddressSpace {
        control: s(3),
        dest: s(6),
    };
    assert_eq!(err(&call(&k, 0, create6)), Error::NoFreeObject);
    ok(&call(
        &k,
        0,
        Syscall::MapPage {
            aspace: s(5),
            mem: s(1),
            vaddr: 0x4000,
            attrs: PageAttrs::empty(),
            offset: 0,
        },
    ));
    assert_eq!(k.hal.pt.leaves(0xB000).len(), 1);
    k.check_invariants().unwrap();
}

/// WriteRegisters sets where an inactive thread starts (through `Hal::set_entry`); it needs
/// MANAGE, checks its arguments, and is refused for a thread that runs or may still run.
#[test]
fn write_registers_sets_the_entry_of_an_inactive_thread() {
    let mut k = kernel(2);
    let a = k.create_address_space(0xA000).unwrap();
    let r = k.create_thread(10, 0, Some(a)).unwrap();
    let t = k.create_thread(10, 1, Some(a)).unwrap();
    k.install_cap(r, s(0), ObjRef::Thread(t), Rights::ALL, 0)
        .unwrap();
    k.install_cap(r, s(1), ObjRef::Thread(t), Rights::READ, 0)
        .unwrap();
    k.start(r).unwrap();
    k.timer_tick(0);
    k.hal.take();
    let wr = |slot, pc| Syscall::WriteRegisters {
        thread: s(slot),
        pc,
        sp: 0x8000,
        arg: 42,
    };
    assert_eq!(err(&call(&k, 0, wr(1, 0x1000))), Error::MissingRight);
    assert_eq!(err(&call(&k, 0, wr(0, USER_TOP))), Error::OutOfRange);
    ok(&call(&k, 0, wr(0, 0x1000)));
    assert_eq!(k.hal.take(), vec![Ev::SetEntry(t, 0x1000, 0x8000, 42)]);
    assert_eq!(
        wr(0, 0x1000),
        Syscall::decode(&wr(0, 0x1000).encode()).unwrap()
    );
    ok(&call(&k, 0, Syscall::Resume { thread: s(0) }));
    assert_eq!(k.timer_tick(1).thread, Some(t));
    assert_eq!(err(&call(&k, 0, wr(0, 0x2000))), Error::InUse, "runnable");
    // Suspended from core 0 while core 1 still runs it: refused until core 1 dropped it.
    ok(&call(&k, 0, Syscall::Suspend { thread: s(0) }));
    assert_eq!(
        err(&call(&k, 0, wr(0, 0x2000))),
        Error::InUse,
        "still current"
    );
    k.ipi(1, IpiKind::Reschedule);
    k.hal.take();
    ok(&call(&k, 0, wr(0, 0x2000)));
    assert_eq!(k.hal.take(), vec![Ev::SetEntry(t, 0x2000, 0x8000, 42)]);
    k.check_invariants().unwrap();
}

/// Regression (found by the in-guest fuzzer, `mode=fuzz`): `Resume` of a thread made by
/// `CreateThread` that never got registers made the kernel hand the HAL a thread with no user
/// context, and the x86 HAL stopped the machine ("the kernel picked thread N which has no user
/// context"). In a TCB reused after `DeleteThread`, the HAL would have run the dead thread's
/// registers. Now `Resume` refuses such a thread until `WriteRegisters` gives it an entry.
#[test]
fn resume_refuses_a_created_thread_until_write_registers() {
    let mut k = kernel(1);
    let a = k.create_address_space(0xA000).unwrap();
    let r = k.create_thread(10, 0, Some(a)).unwrap();
    k.install_cap(r, s(0), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    k.install_cap(r, s(1), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    // A boot-time thread without a context is refused as well.
    let bare = k.create_thread_without_entry(5, 0, Some(a)).unwrap();
    k.install_cap(r, s(3), ObjRef::Thread(bare), Rights::ALL, 0)
        .unwrap();
    k.start(r).unwrap();
    k.timer_tick(0);
    let resume = |slot| Syscall::Resume { thread: s(slot) };
    assert_eq!(err(&call(&k, 0, resume(3))), Error::InvalidArgument);
    for round in 0..2 {
        let created = call(
            &k,
            0,
            Syscall::CreateThread {
                control: s(0),
                dest: s(2),
                aspace: s(1),
                priority: 5,
                core: 0,
            },
        );
        let t = ThreadId::new(ok(&created).0).unwrap();
        assert_eq!(
            err(&call(&k, 0, resume(2))),
            Error::InvalidArgument,
            "round {round}: no registers yet"
        );
        assert_eq!(k.thread_state(t), (Life::Alive, ThreadState::Inactive));
        ok(&call(
            &k,
            0,
            Syscall::WriteRegisters {
                thread: s(2),
                pc: 0x1000,
                sp: 0x2000,
                arg: round,
            },
        ));
        ok(&call(&k, 0, resume(2)));
        assert_eq!(k.thread_state(t).1, ThreadState::Runnable);
        // Deleted, its TCB is reused by the next round's CreateThread: refused again.
        ok(&call(&k, 0, Syscall::DeleteThread { thread: s(2) }));
        k.check_invariants().unwrap();
    }
}

/// Memory regions: split (in range, no sibling overlap, fresh slot), kinds and rights of
/// mappings, MemInfo, merge keeping mappings, revoke and the last-capability delete removing
/// every mapping made through the region or its descendants, with remote shoot-down; page
/// tables back to the pool.
#[test]
fn memory_regions_split_map_merge_and_revoke() {
    let mut k = kernel(2);
    let a = k.create_address_space(0xA000).unwrap();
    let ram = k.create_memory(0x10_0000, 16, MemKind::Ram).unwrap();
    let dev = k.create_memory(0xFE00_0000, 1, MemKind::Device).unwrap();
    assert_eq!(
        k.create_memory(0x10_F000, 4, MemKind::Ram),
        Err(Error::Overlap),
        "boot regions never overlap"
    );
    let t0 = k.create_thread(10, 0, Some(a)).unwrap();
    let t1 = k.create_thread(10, 1, Some(a)).unwrap();
    let rw = Rights::READ | Rights::WRITE | Rights::MANAGE | Rights::GRANT;
    k.install_cap(t0, s(0), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(t0, s(1), ObjRef::Memory(ram), rw, 0).unwrap();
    k.install_cap(t0, s(2), ObjRef::Memory(dev), Rights::ALL, 0)
        .unwrap();
    k.start(t0).unwrap();
    k.start(t1).unwrap();
    k.timer_tick(0);
    k.timer_tick(1);
    k.hal.take();
    let split = |offset, pages, dest| Syscall::MemSplit {
        mem: s(1),
        dest: s(dest),
        offset,
        pages,
    };
    assert_eq!(err(&call(&k, 0, split(14, 4, 3))), Error::OutOfRange);
    assert_eq!(
        err(&call(&k, 0, split(usize::MAX, 2, 3))),
        Error::OutOfRange
    );
    let (c1, _) = ok(&call(&k, 0, split(4, 4, 3)));
    assert_eq!(err(&call(&k, 0, split(7, 2, 4))), Error::Overlap);
    let (c2, _) = ok(&call(&k, 0, split(8, 4, 4)));
    let c1 = MemId::new(c1).unwrap();
    let c2 = MemId::new(c2).unwrap();
    assert_eq!(k.memory(c1), Some((0x10_4000, 4, MemKind::Ram, Some(ram))));
    let (base, msg) = ok(&call(&k, 0, Syscall::MemInfo { mem: s(4) }));
    assert_eq!(
        (base, msg[0], msg[1], msg[2]),
        (0x10_8000, 4, 0, c2.index())
    );
    let map = |mem, vaddr, attrs, offset| Syscall::MapPage {
        aspace: s(0),
        mem: s(mem),
        vaddr,
        attrs,
        offset,
    };
    assert_eq!(
        err(&call(&k, 0, map(3, 0x1000, PageAttrs::empty(), 4))),
        Error::OutOfRange
    );
    assert_eq!(
        err(&call(&k, 0, map(3, 0x1000, PageAttrs::EXEC, 0))),
        Error::MissingRight
    );
    assert_eq!(
        err(&call(&k, 0, map(3, 0x1000, PageAttrs::DEVICE, 0))),
        Error::WrongMemoryKind,
        "RAM never as device memory"
    );
    assert_eq!(
        err(&call(&k, 0, map(2, 0x1000, PageAttrs::WRITE, 0))),
        Error::WrongMemoryKind,
        "device memory never as normal memory"
    );
    ok(&call(
        &k,
        0,
        map(2, 0x1000, PageAttrs::DEVICE | PageAttrs::WRITE, 0),
    ));
    ok(&call(&k, 0, map(3, 0x2000, PageAttrs::WRITE, 1)));
    ok(&call(&k, 0, map(4, 0x3000, PageAttrs::WRITE, 0)));
    ok(&call(&k, 0, map(1, 0x4000, PageAttrs::empty(), 5)));
    assert_eq!(k.check_memory(), Ok(4));
    assert_eq!(
        k.hal.pt.lookup(0xA000, 0x2000).map(|l| l.phys),
        Some(0x10_5000)
    );
    // Merge c2 into c1: c2's mapping stays, now through c1; c2's capability is gone.
    ok(&call(&k, 0, Syscall::MemMerge { a: s(3), b: s(4) }));
    assert_eq!(k.memory(c1), Some((0x10_4000, 8, MemKind::Ram, Some(ram))));
    assert_eq!(k.memory(c2), None);
    assert_eq!(k.cap_of(t0, s(4)), None);
    assert_eq!(k.check_memory(), Ok(4));
    // Hand c1 to t1 and revoke from the parent: every mapping through c1 goes, on both cores,
    // the parent's own mapping of page 5 (inside c1's range) stays.
    ok(&call(
        &k,
        0,
        Syscall::Mint {
            src: s(1),
            target: MintTarget::Own,
            dest: s(5),
            rights: Rights::READ,
            badge: 0,
        },
    ));
    k.hal.take();
    with_remote(&k, 1, || ok(&call(&k, 0, Syscall::MemRevoke { mem: s(1) })));
    let log = k.hal.take();
    assert!(log.contains(&Ev::Sweep(0xA000, 2)), "{log:?}");
    assert!(
        log.contains(&Ev::Flush(1, 0, None)),
        "remote flush: {log:?}"
    );
    assert_eq!(k.cap_of(t0, s(3)), None, "the child's capability is gone");
    assert_eq!(k.memory(c1), None);
    assert!(
        k.hal.pt.lookup(0xA000, 0x4000).is_some(),
        "the parent's mapping stays"
    );
    assert_eq!(k.check_memory(), Ok(2));
    // Deleting the last capabilities of the parent destroys it and its mapping.
    ok(&call(&k, 0, Syscall::CapDelete { slot: s(1) }));
    assert!(k.memory(ram).is_some(), "one capability left");
    with_remote(&k, 1, || {
        ok(&call(&k, 0, Syscall::CapDelete { slot: s(5) }))
    });
    assert_eq!(k.memory(ram), None);
    assert!(k.hal.pt.lookup(0xA000, 0x4000).is_none());
    assert_eq!(k.check_memory(), Ok(1), "the device page is left");
    // Run-time endpoints need a control capability with MANAGE.
    k.install_cap(t0, s(6), ObjRef::Control, Rights::MANAGE, 0)
        .unwrap();
    let (e, _) = ok(&call(
        &k,
        0,
        Syscall::CreateEndpoint {
            control: s(6),
            dest: s(7),
        },
    ));
    assert_eq!(
        k.cap_of(t0, s(7)).map(|c| c.obj),
        Some(ObjRef::Endpoint(EndpointId::new(e).unwrap()))
    );
    assert_eq!(
        err(&call(
            &k,
            0,
            Syscall::CreateNotification {
                control: s(0),
                dest: s(8)
            }
        )),
        Error::WrongType
    );
    k.check_invariants().unwrap();
}

#[test]
fn null_returns_zero_and_changes_nothing() {
    let (mut k, ts, _, _) = setup(2, &[0, 1]);
    // The first entry of each core picks its thread.
    k.timer_tick(0);
    k.timer_tick(1);
    let before = k.check_invariants().unwrap();
    k.hal.take();
    let e = call(&k, 0, Syscall::Null);
    assert_eq!(e.thread, Some(ts[0]));
    assert_eq!(e.regs, [0; 6]);
    assert_eq!(k.hal.take(), []);
    assert_eq!(k.check_invariants().unwrap(), before);
    assert_eq!(k.current_of(0), Some(ts[0]));
    assert_eq!(k.thread_state(ts[0]), (Life::Alive, ThreadState::Runnable));
    // Garbage in an unused word is refused before the kernel sees the call.
    assert_eq!(
        err(&k.syscall(0, [nr::NULL, 0, 0, 1, 0, 0])),
        Error::InvalidArgument
    );
}

#[test]
#[cfg(feature = "trace")]
fn kernel_busy_spins_at_least_the_ticks_asked_and_refuses_more_than_the_bound() {
    let (k, ts, _, _) = setup(1, &[0]);
    for n in [0, 1, 1000, 50_000] {
        let t0 = k.hal.cycles();
        let e = call(&k, 0, Syscall::KernelBusy { cycles: n });
        let t1 = k.hal.cycles();
        assert_eq!(e.thread, Some(ts[0]));
        let (spun, msg) = ok(&e);
        assert!(spun >= n, "asked {n} ticks, spun {spun}");
        assert_eq!(msg, [0; 4]);
        assert!(t1 - t0 >= n as u64, "{n} ticks asked, {} passed", t1 - t0);
    }
    let max = syscall::BUSY_MAX_CYCLES;
    assert_eq!(
        err(&k.syscall(0, [nr::KERNEL_BUSY, max + 1, 0, 0, 0, 0])),
        Error::InvalidArgument
    );
    assert_eq!(
        err(&k.syscall(0, [nr::KERNEL_BUSY, usize::MAX, 0, 0, 0, 0])),
        Error::InvalidArgument
    );
    assert!(!Syscall::KernelBusy { cycles: max }.is_management());
}

#[test]
#[cfg(feature = "trace")]
fn kernel_busy_ends_on_a_counter_that_does_not_advance() {
    let (k, ts, _, _) = setup(1, &[0]);
    k.hal
        .clock_step
        .store(0, std::sync::atomic::Ordering::Relaxed);
    // Bounded by 1000 x BUSY_SPINS_PER_TICK reads of the counter; it spun no tick.
    let e = call(&k, 0, Syscall::KernelBusy { cycles: 1000 });
    assert_eq!(e.thread, Some(ts[0]));
    assert_eq!(ok(&e), (0, [0; 4]));
}

#[test]
#[cfg(not(feature = "trace"))]
fn kernel_busy_and_counters_need_the_trace_feature() {
    let (k, ts, _, _) = setup(1, &[0]);
    k.timer_tick(0);
    let e = call(&k, 0, Syscall::KernelBusy { cycles: 10 });
    assert_eq!(e.thread, Some(ts[0]));
    assert_eq!(err(&e), Error::UnknownSyscall);
    // The bound is the decoder's, in every build.
    let max = syscall::BUSY_MAX_CYCLES;
    assert_eq!(
        err(&k.syscall(0, [nr::KERNEL_BUSY, max + 1, 0, 0, 0, 0])),
        Error::InvalidArgument
    );
    let e = call(
        &k,
        0,
        Syscall::KernelCounters {
            op: syscall::counters::READ,
            core: 0,
        },
    );
    assert_eq!(e.thread, Some(ts[0]));
    assert_eq!(err(&e), Error::UnknownSyscall);
}

#[test]
#[cfg(feature = "trace")]
fn kernel_counters_count_the_entries_of_each_core_since_the_zero() {
    use syscall::counters::{READ, ZERO};
    let (k, ts, _, _) = setup(2, &[0, 1]);
    k.timer_tick(0);
    k.timer_tick(1);
    let read = |cpu: CpuId, core: usize| {
        let e = call(&k, cpu, Syscall::KernelCounters { op: READ, core });
        assert_eq!(e.thread, Some(ts[cpu]));
        ok(&e)
    };
    call(&k, 0, Syscall::Null);
    assert!(read(0, 0).0 >= 2, "counted since boot");
    assert_eq!(
        ok(&call(&k, 1, Syscall::KernelCounters { op: ZERO, core: 0 })),
        (0, [0; 4])
    );
    for _ in 0..5 {
        call(&k, 0, Syscall::Null);
    }
    call(&k, 1, Syscall::Yield);
    k.timer_tick(1);
    // Core 0: five nulls and this read. Core 1: the Yield and the tick after the zero.
    // Untraced: no cycles counted.
    assert_eq!(read(0, 0), (6, [0, 8, 0, 0]));
    // The read on core 0 above is counted too.
    assert_eq!(read(0, 1), (2, [0, 9, 0, 0]));
    // Zero from core 0 zeroes core 1 as well.
    call(&k, 0, Syscall::KernelCounters { op: ZERO, core: 0 });
    assert_eq!(read(1, 1).0, 1);
    assert_eq!(read(1, 0).0, 0);
    // Bad arguments: an unknown operation, a core the machine does not have, a core with zero.
    for (raw, e) in [
        ([nr::KERNEL_COUNTERS, 2, 0, 0, 0, 0], Error::OutOfRange),
        ([nr::KERNEL_COUNTERS, READ, 2, 0, 0, 0], Error::InvalidCore),
        (
            [nr::KERNEL_COUNTERS, READ, MAX_CPUS, 0, 0, 0],
            Error::InvalidCore,
        ),
        (
            [nr::KERNEL_COUNTERS, ZERO, 1, 0, 0, 0],
            Error::InvalidArgument,
        ),
        (
            [nr::KERNEL_COUNTERS, READ, 0, 1, 0, 0],
            Error::InvalidArgument,
        ),
    ] {
        assert_eq!(err(&k.syscall(0, raw)), e, "{raw:?}");
    }
}

// -------------------------------------------------------------------------------------------
// The IPC fastpath against the full path.
// -------------------------------------------------------------------------------------------

/// Everything a system call can change, as text: every thread's configuration, IPC state and
/// queue links, every endpoint and notification, each core's run queues, current thread and
/// loaded address space. Two kernels with equal digests and equal HAL logs are in the same
/// state.
fn digest<S: crate::strategy::Strategy>(k: &Kernel<S, RecHal>) -> String {
    use crate::kernel::{Ctx, RunQueue};
    use std::fmt::Write;
    let ctx = |cpu| Ctx {
        cpu,
        excl: true,
        global: true,
        entry: false,
    };
    let c0 = ctx(0);
    let mut out = String::new();
    for t in ThreadId::all() {
        let ipc = k.ipc(&k.hold(c0, t), |i| *i);
        let q = k.link(&k.qlinks, t, |l| *l);
        let r = k.link(&k.slinks, t, |l| *l);
        writeln!(out, "{t:?} {:?} {ipc:?} {q:?} {r:?}", k.conf(t)).unwrap();
    }
    for e in EndpointId::all() {
        writeln!(out, "{e:?} {:?}", k.ep(&k.hold(c0, e), |x| *x)).unwrap();
    }
    for n in NotificationId::all() {
        writeln!(out, "{n:?} {:?}", k.ntfn(&k.hold(c0, n), |x| *x)).unwrap();
    }
    for c in 0..k.cores() {
        let rq = k.hold(c0, RunQueue(c));
        let local = k.local(ctx(c), |l| (l.loaded, l.direct));
        let flagged: Vec<usize> = (0..MAX_ASPACES)
            .filter(|&a| k.as_active[c][a].load(core::sync::atomic::Ordering::Relaxed))
            .collect();
        writeln!(
            out,
            "core {c}: {:?} current {:?} {local:?} may cache {flagged:?}",
            k.sched(&rq, |s| *s),
            k.current_on(&rq)
        )
        .unwrap();
    }
    out
}

/// A small deterministic generator (xorshift64*), so that a failing seed can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Builds the same random system twice (fastpath on, off) and drives both with the same
/// random entries: IPC on a shared endpoint (Call, ReplyRecv, Recv, Send, Reply), signals,
/// yields, ticks, reschedule IPIs and page faults to a pager, on threads of 1..=3 priorities,
/// 2..=3 address spaces and `cores` cores. After every entry the exits, the HAL logs and the
/// digests must be equal. Returns how often the fastpath was taken and how many entries ran.
fn fastpath_differential<S: crate::strategy::Strategy>(
    strategy: impl Fn() -> S,
    cores: usize,
    seed: u64,
    steps: usize,
) -> (usize, usize) {
    let mut rng = Rng(seed | 1);
    let threads = 3 + rng.below(5) as usize;
    let prios = 1 + rng.below(3) as usize;
    let spaces = 2 + rng.below(2) as usize;
    let plan: Vec<(usize, CpuId, usize)> = (0..threads)
        .map(|_| {
            (
                10 + 5 * rng.below(prios as u64) as usize,
                rng.below(cores as u64) as usize,
                rng.below(spaces as u64) as usize,
            )
        })
        .collect();
    let build = |fast: bool| {
        let mut k = Box::new(Kernel::new(strategy(), RecHal::default(), cores));
        k.set_fastpath(fast);
        let ep = k.create_endpoint().unwrap();
        let pager_ep = k.create_endpoint().unwrap();
        let n = k.create_notification().unwrap();
        let aspaces: Vec<AsId> = (0..spaces)
            .map(|i| k.create_address_space(0xA000 + 0x1000 * i as u64).unwrap())
            .collect();
        // The pager: core 0, top priority, serving faults on its own endpoint.
        let pager = k.create_thread(30, 0, Some(aspaces[0])).unwrap();
        k.install_cap(pager, s(0), ObjRef::Endpoint(pager_ep), Rights::ALL, 0)
            .unwrap();
        let mut ts = Vec::new();
        for &(prio, core, a) in &plan {
            let t = k.create_thread(prio, core, Some(aspaces[a])).unwrap();
            let rw = Rights::READ | Rights::WRITE;
            k.install_cap(t, s(0), ObjRef::Endpoint(ep), rw, t.index() + 1)
                .unwrap();
            k.install_cap(t, s(1), ObjRef::Notification(n), rw, 1 << t.index())
                .unwrap();
            ts.push(t);
        }
        for (i, &t) in ts.iter().enumerate() {
            k.install_cap(pager, s(2 + i), ObjRef::Thread(t), Rights::ALL, 0)
                .unwrap();
        }
        k.start(pager).unwrap();
        for &t in &ts {
            k.start(t).unwrap();
        }
        k.timer_tick(0);
        for i in 0..ts.len() {
            let bind = Syscall::BindPager {
                thread: s(2 + i),
                ep: s(0),
            };
            ok(&k.syscall(0, bind.encode()));
        }
        // The pager waits for faults from now on.
        k.syscall(0, Syscall::Recv { ep: s(0) }.encode());
        (k, ts)
    };
    let (mut fast, ts) = build(true);
    let (mut slow, _) = build(false);
    for k in [&fast, &slow] {
        k.hal.take();
    }
    assert_eq!(digest(&fast), digest(&slow), "seed {seed}: set-up differs");
    let taken_before = fast.fast_taken.load(std::sync::atomic::Ordering::Relaxed);
    let mut ran = 0;
    for step in 0..steps {
        // Both kernels are in the same state (checked below), so either one tells which
        // cores run a thread and whether that thread holds a reply capability.
        let running: Vec<(CpuId, ThreadId)> = (0..cores)
            .filter_map(|c| fast.current_of(c).map(|t| (c, t)))
            .collect();
        if running.is_empty() {
            // Every thread blocked: nothing more can happen but ticks.
            break;
        }
        ran += 1;
        let (cpu, cur) = running[rng.below(running.len() as u64) as usize];
        let msg = [rng.next() as usize, step, cpu, 7];
        let serves = fast.reply_pending(cur);
        let receiver_waits = ts
            .iter()
            .any(|&t| matches!(fast.thread_state(t).1, ThreadState::BlockedRecv(_)));
        // Mostly what a client or a server of the ping-pong does next (a server answers; a
        // client calls a waiting receiver, or becomes one), sometimes anything.
        let op = match rng.below(10) {
            0..=5 if serves => 5,
            0..=5 if receiver_waits => 0,
            0..=3 => 10,
            _ => rng.below(20),
        };
        let sc = match op {
            0..=4 => Some(Syscall::Call { ep: s(0), msg }),
            5..=9 => Some(Syscall::ReplyRecv { ep: s(0), msg }),
            10 => Some(Syscall::Recv { ep: s(0) }),
            11 => Some(Syscall::Send { ep: s(0), msg }),
            12 => Some(Syscall::Reply { msg }),
            13 => Some(Syscall::Yield),
            14 => Some(Syscall::Signal { ntfn: s(1) }),
            15 => Some(Syscall::Wait { ntfn: s(1) }),
            // A Call through a slot that holds no endpoint (the full path's error).
            16 => Some(Syscall::Call { ep: s(5), msg }),
            _ => None,
        };
        let run = |k: &Kernel<S, RecHal>| match (sc, op) {
            (Some(sc), _) => k.syscall(cpu, sc.encode()),
            (None, 17) => k.timer_tick(cpu),
            (None, 18) => k.ipi(cpu, IpiKind::Reschedule),
            (None, _) => k.page_fault(cpu, 0x7000 + step * 0x1000, step % 2 == 0),
        };
        let (a, b) = (run(&fast), run(&slow));
        let what = || format!("seed {seed} step {step}: cpu {cpu} op {op} {sc:?}");
        assert_eq!(a, b, "{}: exits differ", what());
        assert_eq!(
            fast.hal.take(),
            slow.hal.take(),
            "{}: HAL logs differ",
            what()
        );
        // A running thread's `ret` is dead (`TcbIpc::ret`): the fastpath hands the thread
        // its registers directly and leaves the field, the full path writes it first. The
        // exits above compared what the thread got; the field is made equal here so that
        // the digests compare the rest (and a later stale read, the exit of a thread resumed
        // after preemption, which the HAL ignores, reads the same in both).
        for c in 0..cores {
            if let Some(t) = slow.current_of(c) {
                let ctx = crate::kernel::Ctx {
                    cpu: 0,
                    excl: true,
                    global: true,
                    entry: false,
                };
                let ret = slow.ipc(&slow.hold(ctx, t), |i| i.ret);
                fast.ipc(&fast.hold(ctx, t), |i| i.ret = ret);
            }
        }
        assert_eq!(digest(&fast), digest(&slow), "{}: states differ", what());
    }
    fast.check_invariants().unwrap();
    slow.check_invariants().unwrap();
    let taken = fast.fast_taken.load(std::sync::atomic::Ordering::Relaxed) - taken_before;
    assert_eq!(
        slow.fast_taken.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the fastpath ran while off"
    );
    (taken, ran)
}

#[test]
fn fastpath_matches_the_full_path_under_every_strategy() {
    const SEEDS: u64 = 60;
    const STEPS: usize = 120;
    let mut taken = [(0usize, 0usize); 3];
    let add = |a: &mut (usize, usize), b: (usize, usize)| {
        a.0 += b.0;
        a.1 += b.1;
    };
    for seed in 1..=SEEDS {
        let cores = 1 + (seed % 2) as usize;
        let ticket = || BigLock::new(TicketLock::new());
        add(
            &mut taken[0],
            fastpath_differential(ticket, cores, seed, STEPS),
        );
        let fine = FineGrained::<kernel_locks::Spin>::new;
        add(
            &mut taken[1],
            fastpath_differential(fine, cores, seed, STEPS),
        );
        // SAFETY: one host thread plays every core in turn, so no two sections overlap.
        let none = || unsafe { crate::NoLock::new() };
        add(
            &mut taken[2],
            fastpath_differential(none, cores, seed, STEPS),
        );
    }
    // The scenarios reach the fastpath often, not only its fallbacks.
    for (name, (n, of)) in ["big lock", "fine-grained", "no lock"].iter().zip(taken) {
        assert!(
            n * 5 > of,
            "{name}: the fastpath was taken {n} times in {of} entries"
        );
    }
}

/// The plain ping-pong of one client and one server on one core, every round trip on the
/// fastpath after the first Call (untraced: through the IPC entry).
#[test]
fn ping_pong_on_one_core_runs_on_the_fastpath() {
    let (k, _) = ping_pong_fast(setup(1, &[0, 0]));
    assert!(!k.tracing());
}

/// The same with a tracer: the calls go through the generic entry, which writes the records,
/// and take the fastpath there.
#[cfg(feature = "trace")]
#[test]
fn traced_ping_pong_runs_on_the_fastpath_and_is_recorded() {
    static TRACER: crate::trace::Tracer<64> = crate::trace::Tracer::new();
    let mut set = setup(1, &[0, 0]);
    set.0.set_tracer(&TRACER);
    let (k, entries) = ping_pong_fast(set);
    assert!(k.tracing());
    let mut out = vec![crate::trace::Record::EMPTY; 64];
    let snap = TRACER.ring(0).snapshot(&mut out);
    assert_eq!((snap.copied as u64, snap.lost), (entries, 0));
    let calls = out[..snap.copied]
        .iter()
        .filter(|r| usize::from(r.number) == crate::syscall::nr::CALL)
        .count();
    assert_eq!(calls, 10, "every Call recorded");
}

/// Ten round trips on the fastpath after the first Call; returns the kernel and its entries.
fn ping_pong_fast(set: (Box<K>, Vec<ThreadId>, EndpointId, NotificationId)) -> (Box<K>, u64) {
    let (k, ts, _, _) = set;
    let (server, client) = (ts[0], ts[1]);
    assert_eq!(k.timer_tick(0).thread, Some(server));
    assert_eq!(call(&k, 0, Syscall::Recv { ep: s(0) }).thread, Some(client));
    let before = k.fast_taken.load(std::sync::atomic::Ordering::Relaxed);
    for i in 0..10 {
        let e = call(
            &k,
            0,
            Syscall::Call {
                ep: s(0),
                msg: [i; 4],
            },
        );
        assert_eq!((e.thread, ok(&e).1), (Some(server), [i; 4]));
        let e = call(
            &k,
            0,
            Syscall::ReplyRecv {
                ep: s(0),
                msg: [i + 1; 4],
            },
        );
        assert_eq!((e.thread, ok(&e).1), (Some(client), [i + 1; 4]));
    }
    assert_eq!(
        k.fast_taken.load(std::sync::atomic::Ordering::Relaxed) - before,
        20
    );
    (k, 22)
}

/// Idle accounting: a core with no thread to run counts cycles from the exit that left it idle
/// to its next interrupt, IPI or tick; `KernelInfo` reads each core's total and the counter.
#[test]
fn idle_cycles_count_from_the_idle_exit_to_the_next_interrupt() {
    use crate::syscall::info::{CYCLES, IDLE_BASE};
    let (k, ts, _, _) = setup(2, &[0, 1]);
    let info = |key| call(&k, 0, Syscall::KernelInfo { key });
    assert_eq!(k.timer_tick(0).thread, Some(ts[0]));
    assert_eq!(k.timer_tick(1).thread, Some(ts[1]));
    assert_eq!(ok(&info(IDLE_BASE + 1)).0, 0, "core 1 has not been idle");
    // Core 1's thread waits on an empty notification: core 1 goes idle.
    assert_eq!(call(&k, 1, Syscall::Wait { ntfn: s(1) }).thread, None);
    let before = ok(&info(CYCLES)).0;
    // The counter advances one per read here; three ticks wake core 1, each ends an idle
    // stretch (and it goes idle again).
    for _ in 0..3 {
        assert_eq!(k.timer_tick(1).thread, None);
    }
    let idle = ok(&info(IDLE_BASE + 1)).0;
    let after = ok(&info(CYCLES)).0;
    assert!(
        idle >= 3,
        "three idle stretches of at least one cycle: {idle}"
    );
    assert!(
        idle < after - before + 3,
        "idle {idle} within the elapsed {}",
        after - before
    );
    // The current stretch counts too: a core that stays idle with no interrupt at all still
    // reads more idle time each time (the counter advances one per read here).
    let again = ok(&info(IDLE_BASE + 1)).0;
    assert!(
        again > idle,
        "the ongoing stretch is included: {again} after {idle}"
    );
    assert_eq!(ok(&info(IDLE_BASE)).0, 0, "core 0 never idled");
    // A core the kernel does not run on reads 0; keys outside the ranges are refused.
    assert_eq!(ok(&info(IDLE_BASE + 2)).0, 0);
    assert_eq!(
        err(&k.syscall(0, [nr::KERNEL_INFO, CYCLES + 1, 0, 0, 0, 0])),
        Error::OutOfRange
    );
    assert_eq!(
        err(&k.syscall(0, [nr::KERNEL_INFO, IDLE_BASE + MAX_CPUS, 0, 0, 0, 0])),
        Error::OutOfRange
    );
}

/// With the `lockdep` feature the fine-grained strategy's locks are checked: the protocol's
/// order (an endpoint, then a TCB) passes, the opposite order panics before it waits, naming
/// both lines; TCBs nest in increasing index order only; and a core that leaves the kernel
/// holding an object lock panics.
#[cfg(feature = "lockdep")]
#[test]
fn lockdep_checks_the_fine_grained_lock_order() {
    use crate::strategy::{lockdep, LockId, Side, Strategy};

    fn message(f: impl FnOnce()) -> std::string::String {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
        *payload.downcast::<std::string::String>().unwrap()
    }
    let site = |line: u32| std::format!("{}:{line}:", file!());
    let fine = FineGrained::<kernel_locks::Spin>::with_cpus(2);
    let (ep, tcb) = (
        LockId::Endpoint(EndpointId::new(3).unwrap()),
        LockId::Tcb(ThreadId::new(5).unwrap()),
    );
    assert!(!fine.enter(0, Side::Shared));
    fine.lock(0, ep);
    let recorded = line!() + 1;
    fine.lock(0, tcb);
    // SAFETY: CPU 0 holds both, and the read side.
    unsafe {
        fine.unlock(0, tcb);
        fine.unlock(0, ep);
        fine.exit(0, Side::Shared);
    }
    assert!(!fine.enter(1, Side::Shared));
    fine.lock(1, tcb);
    let line = line!() + 1;
    let m = message(|| fine.lock(1, ep));
    // This line, and the first site of the opposite order: the one above unless another test
    // of this process (the order graph is the process's) took it first.
    assert!(m.contains(&site(line)), "{m}");
    let first = kernel_locks::lockdep::recorded(&lockdep::ENDPOINT, &lockdep::TCB).unwrap();
    assert!(
        first.file() != file!() || first.line() == recorded,
        "{first}"
    );
    assert!(
        m.contains(&std::format!(
            "`fine.tcb` acquired at {first} while holding `fine.endpoint`"
        )),
        "{m}"
    );
    assert!(
        !fine.is_held(ep),
        "the endpoint lock was taken before the check"
    );
    // TCBs by increasing index only.
    let m = message(|| fine.lock(1, LockId::Tcb(ThreadId::new(2).unwrap())));
    assert!(m.contains("key 2") && m.contains("key 5"), "{m}");
    fine.lock(1, LockId::Tcb(ThreadId::new(6).unwrap()));
    // Leaving with the TCB locks held.
    // SAFETY: CPU 1 entered with the read side and leaves it once; the checker then finds
    // the two TCB locks it still holds.
    let m = message(|| unsafe { fine.exit(1, Side::Shared) });
    assert!(m.contains("still holds `fine.tcb`"), "{m}");
}
