//! The accessors of the kernel's state cells: every `unsafe` access to an object's cell is
//! in one of them, with the argument that makes it race-free, and the intrusive queues built
//! on them.
//!
//! Common argument: in an exclusive section (`ctx.excl`), the strategy guarantees that no
//! other core runs kernel code (see `Strategy`), and the code of one section never holds two
//! references to the same cell (closures do not re-enter the accessor of their own cell), so
//! every access is unique. The per-accessor comments give the argument for shared sections
//! (the fine-grained read side).

use core::cell::UnsafeCell;
use core::sync::atomic::Ordering;

use kernel_locks::CpuId;

use crate::cap::{CSpace, Cap, ObjKind, Rights};
use crate::config::*;
use crate::error::Error;
use crate::hal::{Actions, Hal};
use crate::ids::*;
use crate::strategy::Strategy;

use super::{
    cell_mut, cell_ref, AddressSpace, CoreLocal, CoreSched, Ctx, Endpoint, Held, IrqState, Kernel,
    Link, Meta, Notification, Queue, RunQueue, TcbConf, TcbIpc,
};

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// This core's trace record of its traced entry in progress (the `trace` feature).
    #[cfg(feature = "trace")]
    #[inline(always)]
    pub(super) fn trace_pending<R>(
        &self,
        cpu: CpuId,
        f: impl FnOnce(&mut crate::trace::Pending) -> R,
    ) -> R {
        // SAFETY: only entries on `cpu` touch its cell, one at a time (the HAL contract that
        // `entry` checks with `in_kernel`), and `f` (field stores, `begin`, `note`) reaches no
        // accessor, so this is the only reference while it runs.
        unsafe { cell_mut(&self.trace_rec[cpu], f) }
    }

    /// TCB configuration (copy). Written only in exclusive sections, so a shared section reads
    /// it while nobody writes.
    pub(crate) fn conf(&self, t: ThreadId) -> TcbConf {
        // SAFETY: writers (`conf_mut`) run only in exclusive sections; a shared section runs
        // while none does; within an exclusive section this copy ends before any write.
        unsafe { cell_ref(&self.conf[t.index()], |c| *c) }
    }

    /// Changes TCB configuration (exclusive sections only).
    pub(crate) fn conf_mut<R>(
        &self,
        ctx: Ctx,
        t: ThreadId,
        f: impl FnOnce(&mut TcbConf) -> R,
    ) -> R {
        assert!(ctx.excl, "TCB configuration written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.conf[t.index()], f) }
    }

    /// TCB IPC state: needs the TCB lock in shared sections.
    pub(crate) fn ipc<R>(&self, g: &Held<'_, S, ThreadId>, f: impl FnOnce(&mut TcbIpc) -> R) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the TCB lock
        // of `g.key`, which every accessor of this cell in a shared section holds, or (made by
        // `own_current`) that `g.key` is the calling core's unpublished current thread, which
        // no other core can reach until this section publishes it and releases the lock that
        // guards where it published it, or (made by `fast_peer`) that `g.key` is blocked where
        // only this section reaches it.
        unsafe { cell_mut(&self.ipc[g.key.index()], f) }
    }

    /// A capability of `t`'s CSpace (copy). CSpaces are written only in exclusive sections.
    pub(crate) fn cap(&self, t: ThreadId, slot: CapSlot) -> Result<Cap, Error> {
        // SAFETY: as for `conf`: writers (`cspace_mut`) are exclusive.
        unsafe { cell_ref(&self.cspaces[t.index()], |c| c.get(slot)) }
    }

    /// The endpoint and badge of `t`'s capability in `slot` if it is an endpoint capability
    /// with `rights` ([`CSpace::endpoint`]): the fastpath's lookup, `None` for every failure
    /// (the full path then finds the same slot and reports why).
    #[inline(always)]
    pub(crate) fn fast_lookup_ep(
        &self,
        t: ThreadId,
        slot: CapSlot,
        rights: Rights,
    ) -> Option<(EndpointId, usize)> {
        // SAFETY: as for `cap`.
        unsafe { cell_ref(&self.cspaces[t.index()], |c| c.endpoint(slot, rights)) }
    }

    /// Looks up a capability of `t` and checks kind and rights.
    pub(crate) fn lookup(
        &self,
        t: ThreadId,
        slot: CapSlot,
        kind: ObjKind,
        rights: Rights,
    ) -> Result<Cap, Error> {
        self.cap(t, slot)?.check(kind, rights)
    }

    /// Changes a CSpace (exclusive sections only).
    pub(crate) fn cspace_mut<R>(
        &self,
        ctx: Ctx,
        t: ThreadId,
        f: impl FnOnce(&mut CSpace) -> R,
    ) -> R {
        assert!(ctx.excl, "CSpace written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.cspaces[t.index()], f) }
    }

    /// Reads allocation data and reference counts (written only in exclusive sections).
    pub(crate) fn meta<R>(&self, f: impl FnOnce(&Meta) -> R) -> R {
        // SAFETY: as for `conf`.
        unsafe { cell_ref(&self.meta, f) }
    }

    /// Changes allocation data and reference counts (exclusive sections only).
    pub(crate) fn meta_mut<R>(&self, ctx: Ctx, f: impl FnOnce(&mut Meta) -> R) -> R {
        assert!(ctx.excl, "metadata written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.meta, f) }
    }

    /// A queue link: `links` is `qlinks` (guarded by the lock of the endpoint or notification
    /// whose queue the thread is in) or `slinks` (guarded by the run-queue lock of the thread's
    /// core). Callers hold that lock in shared sections.
    pub(crate) fn link<R>(
        &self,
        links: &[UnsafeCell<Link>; MAX_THREADS],
        t: ThreadId,
        f: impl FnOnce(&mut Link) -> R,
    ) -> R {
        // SAFETY: exclusive section, or the caller holds the lock of the queue containing `t`
        // (or that `t` is being inserted into), which every access to these links holds.
        unsafe { cell_mut(&links[t.index()], f) }
    }

    /// An endpoint: needs the endpoint lock in shared sections.
    pub(crate) fn ep<R>(
        &self,
        g: &Held<'_, S, EndpointId>,
        f: impl FnOnce(&mut Endpoint) -> R,
    ) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the lock.
        unsafe { cell_mut(&self.eps[g.key.index()], f) }
    }

    /// A notification: needs the notification lock in shared sections.
    pub(crate) fn ntfn<R>(
        &self,
        g: &Held<'_, S, NotificationId>,
        f: impl FnOnce(&mut Notification) -> R,
    ) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the lock.
        unsafe { cell_mut(&self.ntfns[g.key.index()], f) }
    }

    /// An IRQ: needs the IRQ lock in shared sections (`bound` is only written exclusively).
    pub(crate) fn irq<R>(&self, g: &Held<'_, S, IrqId>, f: impl FnOnce(&mut IrqState) -> R) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the lock.
        unsafe { cell_mut(&self.irqs[g.key.index()], f) }
    }

    /// An address space (read; written only in exclusive sections).
    pub(crate) fn aspace<R>(&self, a: AsId, f: impl FnOnce(&AddressSpace) -> R) -> R {
        // SAFETY: as for `conf`.
        unsafe { cell_ref(&self.aspaces[a.index()], f) }
    }

    /// Changes an address space (exclusive sections only).
    pub(crate) fn aspace_mut<R>(
        &self,
        ctx: Ctx,
        a: AsId,
        f: impl FnOnce(&mut AddressSpace) -> R,
    ) -> R {
        assert!(ctx.excl, "address space written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.aspaces[a.index()], f) }
    }

    /// A core's scheduler state: needs that core's run-queue lock in shared sections.
    pub(crate) fn sched<R>(
        &self,
        g: &Held<'_, S, RunQueue>,
        f: impl FnOnce(&mut CoreSched) -> R,
    ) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the
        // run-queue lock of core `g.key`.
        unsafe { cell_mut(&self.sched[g.key.0], f) }
    }

    /// The calling core's private state.
    #[inline(always)]
    pub(crate) fn local<R>(&self, ctx: Ctx, f: impl FnOnce(&mut CoreLocal) -> R) -> R {
        self.local_of(ctx.cpu, f)
    }

    /// [`local`](Self::local) for code that has only the core's index: the per-core part of
    /// an entry after its section ([`after_rare`](Self::after_rare)).
    #[inline(always)]
    pub(super) fn local_of<R>(&self, cpu: CpuId, f: impl FnOnce(&mut CoreLocal) -> R) -> R {
        // SAFETY: only core `cpu` touches its `local` cell (callers pass their own core's
        // index), and a core runs one kernel entry at a time (HAL contract; the `in_kernel`
        // flag checks it, see `begin` and `begin_ipc`).
        unsafe { cell_mut(&self.local[cpu], f) }
    }

    /// Records a hardware action for after the critical section.
    pub(crate) fn act(&self, ctx: Ctx, f: impl FnOnce(&mut Actions)) {
        self.local(ctx, |l| f(&mut l.actions));
    }

    // ---------------------------------------------------------------------------------------
    // Intrusive queues.
    // ---------------------------------------------------------------------------------------

    pub(crate) fn q_push(
        &self,
        links: &[UnsafeCell<Link>; MAX_THREADS],
        q: &mut Queue,
        t: ThreadId,
    ) {
        let tail = q.tail;
        self.link(links, t, |l| {
            *l = Link {
                prev: tail,
                next: None,
            }
        });
        match tail {
            Some(p) => self.link(links, p, |l| l.next = Some(t)),
            None => q.head = Some(t),
        }
        q.tail = Some(t);
    }

    pub(crate) fn q_remove(
        &self,
        links: &[UnsafeCell<Link>; MAX_THREADS],
        q: &mut Queue,
        t: ThreadId,
    ) {
        let l = self.link(links, t, core::mem::take);
        match l.prev {
            Some(p) => self.link(links, p, |pl| pl.next = l.next),
            None => q.head = l.next,
        }
        match l.next {
            Some(n) => self.link(links, n, |nl| nl.prev = l.prev),
            None => q.tail = l.prev,
        }
    }

    /// The calling core's current thread, read without the run-queue lock: only the core itself
    /// changes its `current` (in [`schedule`](Self::schedule) and on the fastpath), so no write
    /// can race with this read, and the value stays valid until the core changes it.
    #[inline(always)]
    pub(crate) fn current(&self, ctx: Ctx) -> Option<ThreadId> {
        // Relaxed: only this core writes it (program order).
        self.current[ctx.cpu].load(Ordering::Relaxed)
    }

    /// The current thread of core `g.key`, read holding that core's run-queue lock in shared
    /// sections: the lock orders it after the core's `schedule` (which writes under the lock);
    /// the core's fastpath writes it without the lock, and [`wake`](Self::wake) says why a
    /// value it races with is still the right one to act on.
    pub(crate) fn current_on(&self, g: &Held<'_, S, RunQueue>) -> Option<ThreadId> {
        // Relaxed: see above; the ordering comes from the lock or from `wake`'s handshake.
        self.current[g.key.0].load(Ordering::Relaxed)
    }

    /// Sets the calling core's current thread (caller holds its run-queue lock in shared
    /// sections).
    #[inline(always)]
    pub(crate) fn set_current(&self, g: &Held<'_, S, RunQueue>, t: Option<ThreadId>) {
        assert_eq!(g.key.0, g.cpu, "a core set another core's current thread");
        self.current[g.cpu].store(t, Ordering::Relaxed);
    }

    /// Sets the calling core's current thread without its run-queue lock: the IPC fastpath,
    /// which hands the core from its current thread to a thread it just took off an endpoint
    /// or a reply link. Other cores read `current` only under the run-queue lock, in
    /// [`wake`](Self::wake), whose handshake with the fastpath makes either value right.
    #[inline(always)]
    pub(crate) fn set_current_fast(&self, ctx: Ctx, t: ThreadId) {
        // Relaxed: ordered for other cores by the section's release (the read side's), which
        // `wake`'s acquire of this core's reader slot pairs with.
        self.current[ctx.cpu].store(Some(t), Ordering::Relaxed);
    }

    /// The priority bitmap of core `cpu`'s run queue; exact under its run-queue lock (or in an
    /// exclusive section), a possibly stale snapshot for the core's own fastpath (see
    /// [`wake`](Self::wake)).
    #[inline(always)]
    pub(crate) fn rq_bitmap(&self, cpu: CpuId) -> u32 {
        self.rq_bits[cpu].load(Ordering::Relaxed)
    }

    /// Whether `t` is the current thread of some core (sections with no other core in the
    /// kernel only: `ctx.global`).
    pub(crate) fn current_anywhere(&self, ctx: Ctx, t: ThreadId) -> Option<CpuId> {
        debug_assert!(
            ctx.global,
            "other cores' scheduling state read concurrently"
        );
        (0..self.cores).find(|&c| self.current_on(&self.hold(ctx, RunQueue(c))) == Some(t))
    }
}
