//! Whole-kernel invariant checks and inspection, for tests and debugging. They take
//! `&mut self`: the kernel must be quiescent (no core inside), which the borrow guarantees.

use kernel_locks::CpuId;

use crate::cap::{Cap, ObjRef};
use crate::config::*;
use crate::hal::{Hal, PageAttrs, PhysAddr, SweepAction};
use crate::ids::*;
use crate::kernel::{AsLife, Ctx, Kernel, Life, Queue, Refs, RunQueue, ThreadState};
use crate::mem::{tag_region, MemKind};
use crate::strategy::Strategy;

/// A broken invariant: what, and the thread concerned (if any).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Description.
    pub what: &'static str,
    /// The thread concerned.
    pub thread: Option<ThreadId>,
}

/// Counts from a successful check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Live threads.
    pub threads: usize,
    /// Threads that are some core's current thread.
    pub running: usize,
    /// Threads in run queues.
    pub ready: usize,
    /// Threads blocked on endpoints, replies or notifications.
    pub blocked: usize,
    /// Inactive threads.
    pub inactive: usize,
    /// Capabilities in all CSpaces.
    pub caps: usize,
}

fn fail<T>(what: &'static str, thread: Option<ThreadId>) -> Result<T, Violation> {
    Err(Violation { what, thread })
}

/// Where the checker found a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Nowhere,
    Current,
    RunQueue(CpuId),
    Endpoint(EndpointId),
    Notification(NotificationId),
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    const QUIET: Ctx = Ctx {
        cpu: 0,
        excl: true,
        global: true,
        entry: false,
    };

    fn walk(
        &self,
        q: Queue,
        sched: bool,
        mut visit: impl FnMut(ThreadId) -> Result<(), Violation>,
    ) -> Result<(), Violation> {
        let links = if sched { &self.slinks } else { &self.qlinks };
        let mut prev = None;
        let mut cur = q.head;
        let mut n = 0;
        while let Some(t) = cur {
            n += 1;
            if n > MAX_THREADS {
                return fail("queue has a cycle", Some(t));
            }
            let l = self.link(links, t, |l| *l);
            if l.prev != prev {
                return fail("queue prev link broken", Some(t));
            }
            visit(t)?;
            prev = Some(t);
            cur = l.next;
        }
        if q.tail != prev {
            return fail("queue tail wrong", prev);
        }
        Ok(())
    }

    /// Checks every structural invariant: each live thread is in exactly the place its state
    /// says (current or run queue of its core if runnable, the queue of the object it blocks
    /// on, a consistent reply link), queues are well-linked, run-queue bitmaps match,
    /// reference counts equal the capabilities actually present and no capability names a
    /// dead object.
    pub fn check_invariants(&mut self) -> Result<Summary, Violation> {
        let ctx = Self::QUIET;
        let mut place = [Place::Nowhere; MAX_THREADS];
        let mut sum = Summary::default();
        let put = |place: &mut [Place; MAX_THREADS], t: ThreadId, p: Place| {
            if place[t.index()] != Place::Nowhere {
                return fail("thread in two places", Some(t));
            }
            place[t.index()] = p;
            Ok(())
        };
        for t in ThreadId::all() {
            let conf = self.conf(t);
            if conf.life != Life::Free
                && (conf.priority >= NUM_PRIOS || conf.at_or_above != !0u32 << conf.priority)
            {
                return fail("priority or its run-queue mask wrong", Some(t));
            }
        }
        for c in 0..self.cores {
            let current = self.current_on(&self.hold(ctx, RunQueue(c)));
            if let Some(t) = current {
                if self.conf(t).life == Life::Free {
                    return fail("free TCB is current", Some(t));
                }
                put(&mut place, t, Place::Current)?;
            }
        }
        for c in 0..self.cores {
            let s = self.sched(&self.hold(ctx, RunQueue(c)), |s| *s);
            let bitmap = self.rq_bitmap(c);
            for p in 0..NUM_PRIOS {
                if (bitmap >> p) & 1 != s.queues[p].head.is_some() as u32 {
                    return fail("run-queue bitmap wrong", None);
                }
                self.walk(s.queues[p], true, |t| {
                    let conf = self.conf(t);
                    if conf.life != Life::Alive || conf.core != c || conf.priority != p {
                        return fail("run queue holds a wrong thread", Some(t));
                    }
                    if self.ipc(&self.hold(ctx, t), |i| i.state) != ThreadState::Runnable {
                        return fail("run queue holds a blocked thread", Some(t));
                    }
                    put(&mut place, t, Place::RunQueue(c))
                })?;
            }
        }
        let (n_eps, n_ntfns) = self.meta(|m| (m.n_eps, m.n_ntfns));
        for e in EndpointId::all().take(n_eps) {
            let ep = self.ep(&self.hold(ctx, e), |x| *x);
            self.walk(ep.queue, false, |t| {
                let want = if ep.receivers {
                    ThreadState::BlockedRecv(e)
                } else {
                    ThreadState::BlockedSend(e)
                };
                if self.ipc(&self.hold(ctx, t), |i| i.state) != want {
                    return fail("endpoint queue holds a thread in another state", Some(t));
                }
                put(&mut place, t, Place::Endpoint(e))
            })?;
        }
        for n in NotificationId::all().take(n_ntfns) {
            let x = self.ntfn(&self.hold(ctx, n), |x| *x);
            if x.waiters.head.is_some() && x.word != 0 {
                return fail("notification has waiters and a pending word", None);
            }
            self.walk(x.waiters, false, |t| {
                if self.ipc(&self.hold(ctx, t), |i| i.state) != ThreadState::BlockedNotification(n)
                {
                    return fail(
                        "notification queue holds a thread in another state",
                        Some(t),
                    );
                }
                put(&mut place, t, Place::Notification(n))
            })?;
        }
        let mut refs = Refs::ZERO;
        for t in ThreadId::all() {
            let conf = self.conf(t);
            let ipc = self.ipc(&self.hold(ctx, t), |i| *i);
            let here = place[t.index()];
            if conf.life != Life::Alive {
                if !matches!(here, Place::Nowhere | Place::Current) {
                    return fail("dead thread in a queue", Some(t));
                }
                if CapSlot::all().any(|s| self.cap(t, s).is_ok()) {
                    return fail("dead thread has capabilities", Some(t));
                }
                continue;
            }
            sum.threads += 1;
            let ok = match ipc.state {
                ThreadState::Runnable => matches!(here, Place::Current | Place::RunQueue(_)),
                ThreadState::Inactive => matches!(here, Place::Nowhere | Place::Current),
                ThreadState::BlockedSend(e) | ThreadState::BlockedRecv(e) => {
                    here == Place::Endpoint(e)
                }
                ThreadState::BlockedNotification(n) => here == Place::Notification(n),
                ThreadState::BlockedReply => {
                    let server = ipc.server;
                    matches!(here, Place::Nowhere | Place::Current)
                        && server.is_some_and(|s| {
                            self.conf(s).life == Life::Alive
                                && self.ipc(&self.hold(ctx, s), |i| i.reply_to) == Some(t)
                        })
                }
            };
            if !ok {
                return fail("thread state does not match where it is", Some(t));
            }
            match here {
                Place::Current => sum.running += 1,
                Place::RunQueue(_) => sum.ready += 1,
                Place::Endpoint(_) | Place::Notification(_) => sum.blocked += 1,
                Place::Nowhere if ipc.state == ThreadState::BlockedReply => sum.blocked += 1,
                Place::Nowhere => sum.inactive += 1,
            }
            if let Some(c) = ipc.reply_to {
                let back = self.ipc(&self.hold(ctx, c), |i| (i.state, i.server));
                if back != (ThreadState::BlockedReply, Some(t)) {
                    return fail(
                        "reply capability names a thread that does not wait for it",
                        Some(t),
                    );
                }
            }
            for s in CapSlot::all() {
                let Ok(cap) = self.cap(t, s) else { continue };
                if !self.cap_target_alive(cap) {
                    return fail("capability names a dead object", Some(t));
                }
                *refs.slot(cap.obj) += 1;
                sum.caps += 1;
            }
        }
        let stored = self.meta(|m| m.refs);
        if stored.threads != refs.threads
            || stored.eps != refs.eps
            || stored.ntfns != refs.ntfns
            || stored.aspaces != refs.aspaces
            || stored.mems != refs.mems
            || stored.irqs != refs.irqs
            || stored.control != refs.control
        {
            return fail(
                "reference counts differ from the capabilities present",
                None,
            );
        }
        Ok(sum)
    }

    fn cap_target_alive(&self, cap: Cap) -> bool {
        let m = self.meta(|m| (m.n_eps, m.n_ntfns, m.n_aspaces));
        match cap.obj {
            ObjRef::Thread(t) => self.conf(t).life == Life::Alive,
            ObjRef::Endpoint(e) => e.index() < m.0,
            ObjRef::Notification(n) => n.index() < m.1,
            ObjRef::AddressSpace(a) => {
                a.index() < m.2 && self.aspace(a, |s| s.life) == crate::kernel::AsLife::Alive
            }
            ObjRef::Memory(r) => self.region(r).live,
            ObjRef::IrqHandler(_) | ObjRef::Control => true,
        }
    }

    /// A thread's life and state.
    pub fn thread_state(&mut self, t: ThreadId) -> (Life, ThreadState) {
        (
            self.conf(t).life,
            self.ipc(&self.hold(Self::QUIET, t), |i| i.state),
        )
    }

    /// Whether `t` holds a reply capability (it received a Call it has not answered).
    pub fn reply_pending(&mut self, t: ThreadId) -> bool {
        self.ipc(&self.hold(Self::QUIET, t), |i| i.reply_to.is_some())
    }

    /// A thread's result registers (what it sees when it next runs).
    pub fn thread_regs(&mut self, t: ThreadId) -> crate::syscall::Regs {
        self.ipc(&self.hold(Self::QUIET, t), |i| i.ret)
    }

    /// A thread's priority and core.
    pub fn thread_sched(&mut self, t: ThreadId) -> (usize, CpuId) {
        let c = self.conf(t);
        (c.priority, c.core)
    }

    /// A thread's address space.
    pub fn thread_aspace(&mut self, t: ThreadId) -> Option<AsId> {
        self.conf(t).aspace
    }

    /// A thread's pager endpoint.
    pub fn thread_pager(&mut self, t: ThreadId) -> Option<EndpointId> {
        self.conf(t).pager.map(|p| p.0)
    }

    /// The current thread of `cpu`.
    pub fn current_of(&mut self, cpu: CpuId) -> Option<ThreadId> {
        self.current_on(&self.hold(Self::QUIET, RunQueue(cpu)))
    }

    /// The threads in `cpu`'s run queues, highest priority first.
    pub fn ready_of(&mut self, cpu: CpuId) -> impl Iterator<Item = ThreadId> + '_ {
        let s = self.sched(&self.hold(Self::QUIET, RunQueue(cpu)), |s| *s);
        let mut out = [None; MAX_THREADS];
        let mut n = 0;
        for p in (0..NUM_PRIOS).rev() {
            let mut cur = s.queues[p].head;
            while let Some(t) = cur {
                if n < MAX_THREADS {
                    out[n] = Some(t);
                    n += 1;
                }
                cur = self.link(&self.slinks, t, |l| l.next);
            }
        }
        out.into_iter().flatten()
    }

    /// The capability in a slot.
    pub fn cap_of(&mut self, t: ThreadId, slot: CapSlot) -> Option<Cap> {
        self.cap(t, slot).ok()
    }

    /// A notification's pending word.
    pub fn notification_word(&mut self, n: NotificationId) -> usize {
        self.ntfn(&self.hold(Self::QUIET, n), |x| x.word)
    }

    /// A memory region: base, pages, kind and parent, if it is live.
    pub fn memory(&mut self, m: MemId) -> Option<(PhysAddr, usize, MemKind, Option<MemId>)> {
        let r = self.region(m);
        r.live.then_some((r.base, r.pages, r.kind, r.parent))
    }

    /// Checks the memory invariants: every live child region lies inside its live parent and
    /// has its kind, siblings (and boot regions) never overlap, and every leaf the kernel made
    /// in a live address space names a live region, lies inside it and has the cache attribute
    /// of its kind. Returns the number of kernel-made leaves.
    pub fn check_memory(&mut self) -> Result<usize, Violation> {
        let regions = self.meta(|m| m.regions);
        for (i, r) in regions.iter().enumerate().filter(|(_, r)| r.live) {
            if let Some(p) = r.parent {
                let pr = regions[p.index()];
                if !pr.live || r.base < pr.base || r.end() > pr.end() || r.kind != pr.kind {
                    return fail("region outside its parent", None);
                }
            }
            for (j, o) in regions.iter().enumerate() {
                if j != i && o.live && o.parent == r.parent && o.base < r.end() && r.base < o.end()
                {
                    return fail("sibling regions overlap", None);
                }
            }
        }
        let mut leaves = 0;
        let mut bad = None;
        let n = self.meta(|m| m.n_aspaces);
        for a in AsId::all().take(n) {
            let (root, life) = self.aspace(a, |s| (s.root, s.life));
            if life != AsLife::Alive {
                continue;
            }
            self.hal.sweep(0, root, &mut |leaf| {
                if leaf.tag == 0 {
                    return SweepAction::Keep;
                }
                leaves += 1;
                let ok = tag_region(leaf.tag).is_some_and(|m| {
                    let r = regions[m.index()];
                    r.live
                        && leaf.phys >= r.base
                        && leaf.phys < r.end()
                        && leaf.attrs.contains(PageAttrs::DEVICE) == (r.kind == MemKind::Device)
                        && leaf.attrs.valid()
                });
                if !ok {
                    bad = Some("a mapping names a dead region or lies outside it");
                }
                SweepAction::Keep
            });
        }
        match bad {
            Some(what) => fail(what, None),
            None => Ok(leaves),
        }
    }

    /// Whether an IRQ line is masked, and its binding.
    pub fn irq_state(&mut self, irq: IrqId) -> (bool, Option<NotificationId>) {
        self.irq(&self.hold(Self::QUIET, irq), |s| {
            (s.masked, s.bound.map(|b| b.0))
        })
    }

    /// Cores that loaded an address space (bit per core).
    pub fn aspace_cores(&mut self, a: AsId) -> u64 {
        self.as_cores(a)
    }
}
