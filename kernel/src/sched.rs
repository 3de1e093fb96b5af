//! Scheduling: per-core priority run queues (FIFO within a priority), the current thread of
//! each core, waking threads (with a Reschedule IPI to a remote core) and address-space
//! switches recorded for after the critical section.
//!
//! The current thread is *not* in its run queue. A core's `current` is changed only by that
//! core (here, at the end of each entry); other cores that suspend, delete or move it only
//! change the thread and send an IPI, and the core drops the thread at its next entry.

use core::sync::atomic::{fence, Ordering};

use crate::config::NUM_PRIOS;
use crate::hal::{Hal, IpiKind, PhysAddr};
use crate::ids::ThreadId;
use crate::kernel::{Ctx, Held, Kernel, Life, RunQueue, ThreadState};
use crate::strategy::Strategy;

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// Appends `t` to its priority queue in the run queue `rq` guards.
    pub(crate) fn rq_push(&self, rq: &Held<'_, S, RunQueue>, t: ThreadId) {
        let p = self.conf(t).priority % NUM_PRIOS;
        let mut q = self.sched(rq, |s| s.queues[p]);
        self.q_push(&self.slinks, &mut q, t);
        self.sched(rq, |s| s.queues[p] = q);
        // A load and a store: only the holder of this run-queue lock writes the bits.
        let bits = &self.rq_bits[rq.key().0];
        bits.store(bits.load(Ordering::Relaxed) | 1 << p, Ordering::Relaxed);
    }

    /// Removes `t` from its priority queue in the run queue `rq` guards.
    pub(crate) fn rq_remove(&self, rq: &Held<'_, S, RunQueue>, t: ThreadId) {
        let p = self.conf(t).priority % NUM_PRIOS;
        let mut q = self.sched(rq, |s| s.queues[p]);
        self.q_remove(&self.slinks, &mut q, t);
        self.sched(rq, |s| s.queues[p] = q);
        if q.head.is_none() {
            let bits = &self.rq_bits[rq.key().0];
            bits.store(bits.load(Ordering::Relaxed) & !(1 << p), Ordering::Relaxed);
        }
    }

    /// Highest non-empty priority of `cpu`'s run queue.
    fn rq_best(&self, rq: &Held<'_, S, RunQueue>) -> Option<usize> {
        let bitmap = self.rq_bitmap(rq.key().0);
        (bitmap != 0).then(|| 31 - bitmap.leading_zeros() as usize)
    }

    /// Makes a thread whose state was just set to `Runnable` run: enqueues it on its core,
    /// unless it is still some core's current thread (it then simply continues), and asks a
    /// remote core to reschedule if the thread should preempt what runs there.
    ///
    /// In shared sections the caller holds `t`'s TCB lock; a blocked thread is then never the
    /// current thread of a core other than its own, so checking its own core is enough. Only a
    /// section with no other core in the kernel (`ctx.global`) checks every core (a management
    /// call may wake a thread that was moved while it still runs on its old core); under
    /// `NoLock` a shared section is exclusive but other cores run their own sections, so it
    /// must not read their scheduling state (a data race).
    ///
    /// # Direct switch
    /// A thread of the calling core woken in a kernel entry (`ctx.entry`; the typical case is
    /// the receiver of a Call, or the caller of a ReplyRecv, on one core) is not queued: it is
    /// put aside in [`CoreLocal::direct`](crate::kernel::CoreLocal::direct) for this entry's
    /// [`schedule`](Self::schedule), which either runs it, without the run-queue push and pop,
    /// or queues it exactly where this function would have (see there). Under the
    /// fine-grained strategy this also saves the run-queue lock here: the core reads its own
    /// `current` without it, and nobody else can reach the thread meanwhile: it is `Runnable`
    /// (so no other core's IPC, signal or reply wakes it, they wake only blocked threads,
    /// under its TCB lock), in no endpoint, notification or run queue, and management calls,
    /// which could touch it otherwise, run in exclusive sections, never concurrently with
    /// this shared one. A second wake on the same
    /// core in the same entry queues the first thread before the second, keeping their order.
    pub(crate) fn wake(&self, ctx: Ctx, t: ThreadId) {
        let core = self.conf(t).core;
        if ctx.global && self.current_anywhere(ctx, t).is_some() {
            return;
        }
        if ctx.entry && core == ctx.cpu {
            // This core's `current` is read without the run-queue lock (only this core
            // writes it, see `Kernel::current`).
            if self.current(ctx) == Some(t) {
                return;
            }
            match self.local(ctx, |l| l.direct.replace(t)) {
                None => return,
                Some(first) => {
                    // A second wake in this entry: the first thread is queued first.
                    self.rq_push(&self.hold(ctx, RunQueue(core)), first);
                    return;
                }
            }
        }
        let rq = self.hold(ctx, RunQueue(core));
        if self.current_on(&rq) == Some(t) {
            return;
        }
        self.rq_push(&rq, t);
        if core != ctx.cpu && self.preempts_remote(ctx, &rq, t) {
            self.act(ctx, |a| a.ipi(core, IpiKind::Reschedule));
        }
    }

    /// Whether `t`, just queued on another core's run queue (`rq`), should make that core
    /// reschedule: it has no current thread or one of lower priority, or, in a shared
    /// section, it may be inside a shared section of its own right now.
    ///
    /// # The handshake with the IPC fastpath
    /// A core's fastpath reads its own run queue's priority bitmap and sets its `current`
    /// without the run-queue lock (fine-grained strategy: one object lock per one-way fewer).
    /// So a waker holding that lock may race with it: the fastpath may miss `t`'s bit and run
    /// a thread `r` that `t` preempts, while this core reads the `current` from before `r`.
    /// The store-buffering pattern rules that out: the fastpath's core raised its reader slot
    /// and then ran a full barrier before its bitmap read (the big-reader lock's read side);
    /// here the push (the bitmap store) is followed by a full barrier and the read of that
    /// slot. By the `SeqCst` fences, the two cannot both miss the other's store:
    /// * if this read finds the slot raised, the other core may be in a section (perhaps on
    ///   its fastpath): it gets the Reschedule IPI, whose entry runs `schedule` under the lock
    ///   after the section, so `t` preempts in time if it should (a superfluous IPI at worst);
    /// * if it finds the slot lowered by the core's last `read_unlock` (release, after its
    ///   `current` store; this load acquires), that section is over and its `current` is what
    ///   `current_on` now reads;
    /// * if it finds the slot from before the core's next read-side entry, the fences make
    ///   that entry's bitmap read see `t`'s bit, so its fastpath declines and its full path
    ///   schedules under the lock.
    ///
    /// The check in `wake` that `t` is not the core's current thread reads `current` before
    /// the handshake, and gives the right answer with either value: the fastpath hands the
    /// core from its caller, which another core can reach only through the endpoint queue or
    /// reply link the fastpath publishes it in, under a lock the fastpath releases after its
    /// `current` store (so a waker of the caller sees the new value), to a thread that it holds
    /// by its TCB lock and leaves `Runnable` (which nobody wakes). Exclusive sections race with
    /// nothing and read `current` as is.
    fn preempts_remote(&self, ctx: Ctx, rq: &Held<'_, S, RunQueue>, t: ThreadId) -> bool {
        let core = rq.key().0;
        if !ctx.excl {
            fence(Ordering::SeqCst);
            if self.strategy.may_be_in_section(core) {
                return true;
            }
        }
        self.current_on(rq)
            .is_none_or(|c| self.conf(t).priority > self.conf(c).priority)
    }

    /// Picks the thread to run on the calling core at the end of an entry. With `rotate`
    /// (Yield, timer) the current thread goes behind ready threads of equal priority.
    ///
    /// A current thread that may no longer run here (blocked, suspended, deleted, moved) is
    /// switched out; if it was moved to another core and is runnable, it is enqueued there.
    /// `cur` is the core's current thread (the caller read it: only this function, on this
    /// core, changes it); returns the new one.
    pub(crate) fn schedule(
        &self,
        ctx: Ctx,
        cur: Option<ThreadId>,
        rotate: bool,
    ) -> Option<ThreadId> {
        let cpu = ctx.cpu;
        debug_assert_eq!(cur, self.current(ctx), "stale current thread");
        // A thread `wake` put aside in this entry (see there): it stands for the tail of its
        // priority queue.
        let direct = self.local(ctx, |l| l.direct.take());
        let tcb_guard = cur.map(|t| self.hold(ctx, t));
        let cur_state = tcb_guard
            .as_ref()
            .map(|g| (g.key(), self.conf(g.key()), self.ipc(g, |i| i.state)));
        let keep = cur_state.filter(|(_, c, s)| {
            c.life == Life::Alive && c.core == cpu && *s == ThreadState::Runnable
        });
        let next = {
            let rq = self.hold(ctx, RunQueue(cpu));
            let mut best = self.rq_best(&rq);
            // Had `wake` queued `d`, it would be the tail of queue `p`, and so also its head
            // iff that queue is empty, i.e. iff `p` is above every non-empty priority: then
            // `d` is what popping the best priority returns, and it stays out of the queue
            // unless the current thread is kept (below). Otherwise it is queued now, where
            // `wake` would have put it (nothing was queued on this core since; a second wake
            // queued it already). Either way the decision below is the one the queued
            // version makes.
            let direct = direct.and_then(|d| {
                let p = self.conf(d).priority % NUM_PRIOS;
                if best.is_none_or(|b| p > b) {
                    best = Some(p);
                    Some(d)
                } else {
                    self.rq_push(&rq, d);
                    None
                }
            });
            // With `direct` set, `best` is its priority and it is the head there.
            let pop = |p: usize| {
                if direct.is_some() {
                    return direct;
                }
                let head = self.sched(&rq, |s| s.queues[p].head);
                if let Some(h) = head {
                    self.rq_remove(&rq, h);
                }
                head
            };
            let next = match (keep, best) {
                (Some((t, c, _)), Some(b)) if b > c.priority || (rotate && b == c.priority) => {
                    self.rq_push(&rq, t);
                    pop(b)
                }
                (Some((t, _, _)), _) => {
                    if let Some(d) = direct {
                        self.rq_push(&rq, d);
                    }
                    Some(t)
                }
                (None, Some(b)) => pop(b),
                (None, None) => None,
            };
            self.set_current(&rq, next);
            next
        };
        // A runnable current thread that was moved to another core goes there.
        if let Some((t, c, ThreadState::Runnable)) = cur_state {
            if c.life == Life::Alive && c.core != cpu && c.core < self.cores {
                self.rq_push(&self.hold(ctx, RunQueue(c.core)), t);
                self.act(ctx, |a| a.ipi(c.core, IpiKind::Reschedule));
            }
        }
        drop(tcb_guard);
        if let Some(t) = next {
            self.switch_aspace(ctx, t);
        }
        next
    }

    /// Records the switch to `t`'s address space (for after the critical section) if this
    /// core has another one loaded; `t` is the core's new current thread.
    #[inline(always)]
    pub(crate) fn switch_aspace(&self, ctx: Ctx, t: ThreadId) {
        if let Some(root) = self.aspace_to_load(ctx, t) {
            self.local(ctx, |l| l.actions.switch_to = Some(root));
        }
    }

    /// The root of `t`'s address space if this core has another one loaded, with the switch's
    /// bookkeeping done (this core's flag of it, its loaded address space); the caller loads
    /// it after the critical section. The fastpath keeps the root in a register for that
    /// (`Kernel::ipc_entry`) where [`switch_aspace`](Self::switch_aspace) records it in the
    /// core's actions: a store and a reload of an `Option<PhysAddr>` less per one-way.
    #[inline(always)]
    pub(crate) fn aspace_to_load(&self, ctx: Ctx, t: ThreadId) -> Option<PhysAddr> {
        let cpu = ctx.cpu;
        if let Some(a) = self.conf(t).aspace {
            if self.local(ctx, |l| l.loaded) != Some(a) {
                let root = self.aspace(a, |s| s.root);
                // Set in the section, before the load: an unmap in any later section sees it.
                //
                // A plain store of this core's own flag (see `Kernel::as_active`).
                //
                // Relaxed: unmaps and address-space deletions, the only readers that act on
                // the flag (`shoot_down`), run in exclusive (management) sections. The strategy
                // orders this section's exit (a release, after this store in program order)
                // before the entry (an acquire) of any later section, exclusive ones included,
                // so a later unmapper sees the flag; under the fine-grained strategy an
                // exclusive section never overlaps this shared one (write side of the
                // big-reader lock); under `NoLock` no other core touches `a` (its creator's
                // promise). An unmapper whose section came *before* this one cannot miss us
                // either: its page-table stores were made visible to every table walker before
                // its section ended (HAL `unmap_page`), so the address space this core loads
                // after this section no longer has the mapping. Release would add nothing but
                // a `dmb ish` per switch on ARMv7 (two per round trip).
                self.as_active[cpu][a.index()].store(true, core::sync::atomic::Ordering::Relaxed);
                // The flag of the address space left stays set (see `Kernel::as_active`).
                self.local(ctx, |l| l.loaded = Some(a));
                return Some(root);
            }
        }
        None
    }
}
