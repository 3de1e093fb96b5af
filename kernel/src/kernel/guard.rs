//! Guard tokens: proof that a section may touch one object's lock-guarded state ([`Held`],
//! two TCBs at once: [`Tcbs`]), the objects that have a lock ([`Guarded`]), and the methods
//! that make tokens: by taking the lock ([`Kernel::hold`]), or without it where the protocol
//! allows (the IPC fastpath's own current thread and its peer).

use kernel_locks::CpuId;

use crate::hal::Hal;
use crate::ids::*;
use crate::strategy::{LockId, Strategy};

use super::{Ctx, Kernel, ThreadState};

/// An object whose state one lock guards: what [`Kernel::hold`] takes, and the key a [`Held`]
/// token carries.
pub(crate) trait Guarded: Copy + PartialEq + core::fmt::Debug {
    /// The lock of this object.
    fn lock_id(self) -> LockId;
}

impl Guarded for ThreadId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Tcb(self)
    }
}

impl Guarded for EndpointId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Endpoint(self)
    }
}

impl Guarded for NotificationId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Notification(self)
    }
}

impl Guarded for IrqId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Irq(self)
    }
}

/// A core's run queue and current thread, as a [`Guarded`] key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RunQueue(pub CpuId);

impl Guarded for RunQueue {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::RunQueue(self.0)
    }
}

/// Proof that a section may touch one object's lock-guarded state: the object's lock is held
/// (released on drop), or the section is exclusive (nothing was taken), or the object is the
/// calling core's own unpublished current thread ([`Kernel::own_current`], nothing taken). The accessors of that
/// state ([`Kernel::ipc`], [`Kernel::ep`], [`Kernel::ntfn`], [`Kernel::irq`], [`Kernel::sched`],
/// [`Kernel::current_on`]) take the token instead of the object's id, so the fine-grained
/// discipline "hold the object's lock in shared sections" is checked by the compiler: the state
/// of an object cannot be reached without a guard of that very object, in release builds too.
pub(crate) struct Held<'k, S: Strategy, K: Guarded> {
    strategy: &'k S,
    pub(super) cpu: CpuId,
    pub(super) key: K,
    locked: bool,
}

impl<S: Strategy, K: Guarded> Held<'_, S, K> {
    /// Ends the token without releasing its lock: its key if it holds the lock, for a release
    /// at the section's end ([`Strategy::exit_releasing`]).
    #[inline(always)]
    pub(crate) fn keep_locked(self) -> Option<K> {
        let held = self.locked.then_some(self.key);
        core::mem::forget(self);
        held
    }

    /// The object this token guards.
    #[inline(always)]
    pub fn key(&self) -> K {
        self.key
    }
}

impl<S: Strategy, K: Guarded> Drop for Held<'_, S, K> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: `key`'s lock was taken by `cpu` in `Kernel::hold` and is released once,
            // here.
            unsafe { self.strategy.unlock(self.cpu, self.key.lock_id()) }
        }
    }
}

/// The tokens of two TCBs taken in index order ([`Kernel::hold2`]); one if both are the same.
pub(crate) struct Tcbs<'k, S: Strategy> {
    lo: Held<'k, S, ThreadId>,
    hi: Option<Held<'k, S, ThreadId>>,
}

impl<'k, S: Strategy> Tcbs<'k, S> {
    /// The token of `t`, one of the two. Naming another thread is a kernel bug, reported even
    /// in release builds (a compare per access, off any loop).
    #[inline(always)]
    pub fn of(&self, t: ThreadId) -> &Held<'k, S, ThreadId> {
        match &self.hi {
            Some(h) if h.key == t => h,
            _ => {
                assert!(self.lo.key == t, "TCB {t:?} accessed without its lock");
                &self.lo
            }
        }
    }
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// Takes an object lock unless the section is exclusive.
    ///
    /// Always inlined, like [`Held`]'s drop and the fine-grained strategy's `lock`/`unlock`:
    /// a round trip passes here 18 times, and out of line each pass costs a call, a return and
    /// a jump-table dispatch on the [`LockId`] kind that inlining folds into the call site
    /// (measured on the hosted ping-pong: about 80 of ~575 cycles per round trip).
    #[inline(always)]
    #[cfg_attr(feature = "lockdep", track_caller)]
    pub(crate) fn hold<K: Guarded>(&self, ctx: Ctx, key: K) -> Held<'_, S, K> {
        let locked = !ctx.excl;
        if locked {
            #[cfg(feature = "trace")]
            if self.tracer.is_some() {
                self.lock_traced(ctx.cpu, key.lock_id());
            } else {
                self.strategy.lock(ctx.cpu, key.lock_id());
            }
            #[cfg(not(feature = "trace"))]
            self.strategy.lock(ctx.cpu, key.lock_id());
        }
        self.token(ctx, key, locked)
    }

    /// The token of `key` for a section of `ctx` (`locked`: its lock was taken for it).
    #[inline(always)]
    fn token<K: Guarded>(&self, ctx: Ctx, key: K, locked: bool) -> Held<'_, S, K> {
        Held {
            strategy: &self.strategy,
            cpu: ctx.cpu,
            key,
            locked,
        }
    }

    /// Takes object lock `id` and notes it in the entry's trace record (the `trace` feature
    /// with a tracer set): the counter read before the request and after the acquisition.
    #[cfg(feature = "trace")]
    #[inline(never)]
    #[cfg_attr(feature = "lockdep", track_caller)]
    fn lock_traced(&self, cpu: CpuId, id: LockId) {
        let requested = self.hal.trace_cycles();
        self.strategy.lock(cpu, id);
        let acquired = self.hal.trace_cycles();
        self.trace_pending(cpu, |p| p.note(id.trace_id(), requested, acquired));
    }

    /// Locks two TCBs in index order (one if equal).
    #[inline(always)]
    #[cfg_attr(feature = "lockdep", track_caller)]
    pub(crate) fn hold2(&self, ctx: Ctx, a: ThreadId, b: ThreadId) -> Tcbs<'_, S> {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let lo = self.hold(ctx, lo);
        let hi = (lo.key != hi).then(|| self.hold(ctx, hi));
        Tcbs { lo, hi }
    }

    /// The IPC state of `cur`, the calling core's current thread as the entry read it, without
    /// its TCB lock: the token if the thread is `Runnable`, `None` otherwise (the caller then
    /// takes the lock, [`hold`](Self::hold)). The IPC fastpath's way to touch the caller's own
    /// state, as the fine-grained protocol allows (see [`strategy`](crate::strategy)).
    ///
    /// Why no other core can touch the thread meanwhile: shared sections of other cores reach
    /// a thread only through an endpoint's or notification's queue, a server's reply link, or
    /// a run queue, and none of these holds the current thread of a core while it is current
    /// and `Runnable` (it is in no queue, and a reply link names only a thread blocked on its
    /// reply); management calls could, but run in exclusive sections, which no shared section
    /// overlaps. The current thread at the start of an entry is in that state or in one only
    /// an exclusive section made (suspended, moved, deleted: in no queue either), so the read of
    /// its state here races with nothing.
    ///
    /// **The token is valid only until the section publishes the thread**: once it is pushed
    /// onto a queue or named by a reply link, other cores may take its lock as soon as the
    /// lock guarding that queue or link is released, so the caller must be done with the token
    /// before it releases that lock (the fastpath drops it before the endpoint's guard).
    #[inline(always)]
    pub(crate) fn own_current(&self, ctx: Ctx, cur: ThreadId) -> Option<Held<'_, S, ThreadId>> {
        debug_assert_eq!(
            Some(cur),
            self.current(ctx),
            "not the core's current thread"
        );
        let g = self.token(ctx, cur, false);
        (self.ipc(&g, |i| i.state) == ThreadState::Runnable).then_some(g)
    }

    /// The IPC state of `peer`, the other thread of a fastpath IPC, without its TCB lock: a
    /// thread of this core, blocked where only this section can reach it. Either it waits as
    /// a receiver in the queue of an endpoint whose lock this section holds (`Call`), or it
    /// waits for the reply of this core's current thread, whose reply link names it
    /// (`ReplyRecv`); the caller has checked which.
    ///
    /// Why no other core touches it meanwhile: shared sections of other cores reach a blocked
    /// thread only through what holds it, the endpoint's queue (under the endpoint's lock,
    /// which this section holds) or the server's reply link (followed only by the server's
    /// core while the server runs, and the server is this core's current thread, which this
    /// section owns, see [`own_current`](Self::own_current)). Reply links never outlive the
    /// wait (`answer` and `detach` clear the server's link whenever a caller stops waiting;
    /// [`check_invariants`](Self::check_invariants) checks it), a blocked thread is no core's
    /// current thread and in no run queue, and management calls run in exclusive sections.
    /// The section that blocked the thread ran before this one: on this core, or on another
    /// before an exclusive section moved the thread here (which orders it before this one).
    ///
    /// What the caller writes is published as the thread's lock would publish it: every later
    /// access by another core reaches the thread through the endpoint's lock (released after
    /// the writes), through a lock this core releases later (the thread runs here next), or in
    /// an exclusive section (which waits for this core's read side to end). Debug builds check
    /// that no other core holds the thread's lock at the start and at the end.
    #[inline(always)]
    pub(crate) fn fast_peer(&self, ctx: Ctx, peer: ThreadId) -> Held<'_, S, ThreadId> {
        debug_assert!(
            ctx.excl || !self.strategy.is_held(LockId::Tcb(peer)),
            "the fastpath's peer's TCB lock is held elsewhere"
        );
        self.token(ctx, peer, false)
    }

    /// Ends a [`fast_peer`](Self::fast_peer) token: debug builds check again that no other
    /// core took the thread's lock while this section wrote its state.
    #[inline(always)]
    pub(crate) fn fast_peer_done(&self, ctx: Ctx, g: Held<'_, S, ThreadId>) {
        debug_assert!(
            ctx.excl || !self.strategy.is_held(LockId::Tcb(g.key)),
            "the fastpath's peer's TCB lock was taken elsewhere"
        );
        drop(g);
    }
}
