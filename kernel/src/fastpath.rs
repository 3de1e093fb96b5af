//! The IPC fastpath: `Call` and `ReplyRecv` in their common case, done in one pass instead of
//! decode, execute, wake and schedule (seL4's `fastpath_call` and `fastpath_reply_recv` are
//! the model).
//!
//! # When it is taken
//! * `Call`: the caller may run here (alive, on this core, runnable), its capability names an
//!   endpoint with the write right, a receiver waits there, the receiver belongs to this core,
//!   and no thread queued on this core has its priority or more (so the receiver is what
//!   [`schedule`](Kernel::schedule) would pick).
//! * `ReplyRecv`: the server may run here, its capability names an endpoint with the read
//!   right, no sender waits there (the server will block), it holds a reply capability whose
//!   caller still waits for it, the caller is not a page-fault caller (whose registers a reply
//!   must leave untouched), belongs to this core, and no queued thread of this core has its
//!   priority or more.
//!
//! Every check reads state only; when one fails nothing has changed and the entry goes down
//! the full path ([`Kernel::handle`]), which then finds the same state. When all pass, the
//! fastpath makes exactly the changes the full path would: the same message, badge and
//! reply link, the same thread states and queue order, the same current thread and the same
//! address-space switch (the tests run every scenario with the fastpath on and off and compare
//! the kernels' states). One field it leaves: the resumed thread's saved result registers
//! (`TcbIpc::ret`), which the full path writes and reads straight back; the fastpath hands
//! them to the exit in registers instead (six stores fewer per call), and a running thread's
//! `ret` is dead until its next system call writes it.
//!
//! # Locks
//! It runs inside the strategy's section like any entry: the big locks and RTM around it, and
//! under the fine-grained strategy one object lock, the endpoint's, against 8 (Call) and 10
//! (ReplyRecv) on the full path, and fewer than the paper's four (the read side, the
//! endpoint, two TCBs). No TCB takes a lock. The calling thread's own TCB: it is this core's
//! current, `Runnable` thread, which no other core can reach until the fastpath publishes it
//! (onto the endpoint's queue, or in the receiver's reply link) under the endpoint's lock
//! ([`Kernel::own_current`] has the argument). The other thread's TCB (the receiver a `Call`
//! wakes, the caller a `ReplyRecv` answers): a thread of this core, blocked where only this
//! section reaches it, in the queue of the endpoint it holds or named by the reply link of
//! the thread it owns ([`Kernel::fast_peer`] has the argument; debug builds check that no
//! other core holds that lock meanwhile). Taking the other thread's TCB lock would cost one
//! atomic read-modify-write and its barriers per one-way IPC (23 instructions per round trip
//! on x86_64 under `-icount`, 14 on ARMv7). This core's run queue takes no lock either:
//! the fastpath only reads its priority bitmap and sets the core's `current`, and a core that
//! queues a thread here meanwhile either shows in that read or sends a Reschedule IPI
//! ([`Kernel::wake`] has the handshake). The exit's registers are the ones it just wrote, so
//! the exit takes no TCB lock to read them back. Where a release costs a barrier
//! ([`Hal::MERGE_RELEASES`](crate::Hal): ARMv7) the endpoint lock is kept to the section's
//! end and released with the read side after one `dmb` (4 instructions less per round trip
//! than a barrier of its own); elsewhere it is released when the commit is done.
//!
//! # Message
//! The message is read from the calling thread's saved registers (`msg`) at the end of the
//! commit, after the state changes and before the locks are released: read first, its four
//! words would stay live through the whole commit, spilled to the stack and loaded back for
//! the exit (14 instructions more per round trip on x86_64, 18 on ARMv7).
//! Not after the release: from then on another core may reach the caller (delete it, make a
//! new thread in its place and set that thread's entry registers), so its saved registers
//! are only stable inside the section.
//!
//! # Why a flag
//! [`Kernel::set_fastpath`] turns it off, for the comparisons above and for benchmarks that
//! measure what the fastpath saves (the images' `fastpath=0`).

use crate::cap::Rights;
use crate::hal::{Hal, PhysAddr};
use crate::ids::{CapSlot, EndpointId, ThreadId};
use crate::kernel::{Ctx, Entry, Exit, Held, Kernel, Life, ThreadState};
use crate::strategy::{LockId, Strategy};
use crate::syscall::{ok_regs, IpcCall, Msg, Regs, Syscall};

/// What the fastpath did: the core's new current thread and its result registers, and the
/// address space to load after the critical section, if any (`Kernel::aspace_to_load`: the
/// switch's bookkeeping is done; the root is carried here, in registers, instead of in the
/// core's recorded actions).
pub(crate) struct FastExit {
    pub exit: Exit,
    pub load: Option<PhysAddr>,
    /// The endpoint lock, still held, that the section's end releases
    /// ([`Strategy::exit_releasing`](crate::strategy::Strategy)); `None` under the exclusive
    /// strategies, which take no object lock.
    pub held: Option<EndpointId>,
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// Runs `entry` on the fastpath if its common case holds; returns the core's new current
    /// thread and its result registers (what the full path's `exit_regs` would read back,
    /// without taking its TCB lock again), or `None` (nothing changed) for the full path. The
    /// generic entry's version: the address-space switch goes into the core's actions, which
    /// the entry runs after its section.
    #[inline]
    pub(crate) fn fastpath(&self, ctx: Ctx, cur: Option<ThreadId>, entry: &Entry) -> Option<Exit> {
        let fast = match *entry {
            Entry::Syscall(Ok(Syscall::Call { ep, msg })) => {
                self.fast_ipc(ctx, cur, IpcCall::Call, ep, || msg)
            }
            Entry::Syscall(Ok(Syscall::ReplyRecv { ep, msg })) => {
                self.fast_ipc(ctx, cur, IpcCall::ReplyRecv, ep, || msg)
            }
            _ => None,
        }?;
        if let Some(ep) = fast.held {
            // SAFETY: the fastpath took `ep`'s lock in this section, on this core, and kept it.
            unsafe { self.strategy.unlock(ctx.cpu, LockId::Endpoint(ep)) };
        }
        if let Some(root) = fast.load {
            self.local(ctx, |l| l.actions.switch_to = Some(root));
        }
        Some(fast.exit)
    }

    /// [`fastpath`](Self::fastpath) for a decoded `Call` or `ReplyRecv` (the IPC entry,
    /// [`Kernel::syscall`], decodes them without building an [`Entry`]). `msg` gives the
    /// message when the fastpath commits (the IPC entry reads it from the saved registers
    /// then, see [`SavedRegs`](crate::SavedRegs)).
    #[inline(always)]
    pub(crate) fn fast_ipc(
        &self,
        ctx: Ctx,
        cur: Option<ThreadId>,
        call: IpcCall,
        ep: CapSlot,
        msg: impl FnOnce() -> Msg,
    ) -> Option<FastExit> {
        let t = cur?;
        match call {
            IpcCall::Call => self.fast_call(ctx, t, ep, msg),
            IpcCall::ReplyRecv => self.fast_reply_recv(ctx, t, ep, msg),
        }
    }

    /// Whether `t` (the current thread) may run on this core as far as its configuration says
    /// (its IPC state is checked under its TCB lock by the caller).
    #[inline(always)]
    fn fast_alive_here(&self, ctx: Ctx, t: ThreadId) -> bool {
        let c = self.conf(t);
        c.life == Life::Alive && c.core == ctx.cpu
    }

    /// Whether a thread of this core whose priority's mask is `at_or_above`
    /// ([`TcbConf::at_or_above`](crate::kernel::TcbConf)) would run next: nothing queued here
    /// has its priority or more (then [`schedule`](Self::schedule) picks the woken thread
    /// directly). Read without the run-queue lock: a thread another core queues here
    /// meanwhile either shows in this read or comes with a Reschedule IPI
    /// ([`wake`](Self::wake)'s handshake).
    #[inline(always)]
    fn fast_runs_next(&self, ctx: Ctx, at_or_above: u32) -> bool {
        self.rq_bitmap(ctx.cpu) & at_or_above == 0
    }

    /// `Call` from `t` through its capability `slot` with `msg`.
    #[inline(always)]
    fn fast_call(
        &self,
        ctx: Ctx,
        t: ThreadId,
        slot: CapSlot,
        msg: impl FnOnce() -> Msg,
    ) -> Option<FastExit> {
        if !self.fast_alive_here(ctx, t) {
            return None;
        }
        let gt = self.own_current(ctx, t)?;
        let (ep, badge) = self.fast_lookup_ep(t, slot, Rights::WRITE)?;
        let ge = self.hold(ctx, ep);
        let (mut q, receivers) = self.ep(&ge, |e| (e.queue, e.receivers));
        // A queued receiver is blocked, so it is not `t`, which runs.
        let r = q.head.filter(|_| receivers)?;
        let rc = self.conf(r);
        if rc.core != ctx.cpu {
            return None;
        }
        if !self.fast_runs_next(ctx, rc.at_or_above) {
            return None;
        }
        // A receiver of this core in the queue of the endpoint held here: no lock.
        let gr = self.fast_peer(ctx, r);
        // Committed: what `send` and `schedule` do for this case.
        self.q_remove(&self.qlinks, &mut q, r);
        self.ep(&ge, |e| e.queue = q);
        self.ipc(&gr, |i| {
            i.state = ThreadState::Runnable;
            i.reply_to = Some(t);
        });
        self.ipc(&gt, |i| {
            i.state = ThreadState::BlockedReply;
            i.server = Some(r);
            i.fault = false;
        });
        self.set_current_fast(ctx, r);
        // The message last, still in the section (module docs, "Message").
        let regs = ok_regs(badge, msg());
        // `t` is published by `r`'s reply link, which only `r`, now this core's current
        // thread, follows; the owned tokens go first all the same (`fast_end`).
        Some(self.fast_end(ctx, gt, gr, ge, regs))
    }

    /// `ReplyRecv` from `t` through its capability `slot`, answering with `msg`.
    #[inline(always)]
    fn fast_reply_recv(
        &self,
        ctx: Ctx,
        t: ThreadId,
        slot: CapSlot,
        msg: impl FnOnce() -> Msg,
    ) -> Option<FastExit> {
        if !self.fast_alive_here(ctx, t) {
            return None;
        }
        let gt = self.own_current(ctx, t)?;
        let (ep, _) = self.fast_lookup_ep(t, slot, Rights::READ)?;
        let ge = self.hold(ctx, ep);
        let (mut q, receivers) = self.ep(&ge, |e| (e.queue, e.receivers));
        if q.head.is_some() && !receivers {
            // A sender waits: the server receives at once and keeps running.
            return None;
        }
        // The caller waits for `t`'s reply, so it is not `t`, which runs.
        let c = self.ipc(&gt, |i| i.reply_to)?;
        let cc = self.conf(c);
        if cc.core != ctx.cpu {
            return None;
        }
        // A caller of this core waiting for the reply of `t`, which this section owns: no
        // lock.
        let gc = self.fast_peer(ctx, c);
        let (waits, fault) = self.ipc(&gc, |i| {
            (
                i.state == ThreadState::BlockedReply && i.server == Some(t),
                i.fault,
            )
        });
        // Reply links never outlive the wait (`fast_peer`); a stale one would mean that
        // another core may touch the caller: the full path, which locks it, in release builds.
        debug_assert!(
            waits,
            "a reply link names a thread that does not wait for it"
        );
        if !waits || fault {
            return None;
        }
        if !self.fast_runs_next(ctx, cc.at_or_above) {
            return None;
        }
        // Committed: what `answer`, `recv` and `schedule` do for this case.
        self.ipc(&gt, |i| {
            i.reply_to = None;
            i.state = ThreadState::BlockedRecv(ep);
        });
        self.ipc(&gc, |i| {
            i.server = None;
            i.state = ThreadState::Runnable;
        });
        self.q_push(&self.qlinks, &mut q, t);
        self.ep(&ge, |e| {
            e.queue = q;
            e.receivers = true;
        });
        self.set_current_fast(ctx, c);
        let regs = ok_regs(0, msg());
        // `t` is in the endpoint's queue now: other cores may take its lock once the
        // endpoint's is released, so the owned tokens go first (`fast_end`).
        Some(self.fast_end(ctx, gt, gc, ge, regs))
    }

    /// Ends the commit: the tokens of the calling thread (`own`) and of the one that runs next
    /// (`peer`, which gets `regs`) end first, then the endpoint's lock (`ge`) is released
    /// now or, where the HAL asks for it ([`Hal::MERGE_RELEASES`]), kept for the section's
    /// end; the exit to `peer` ([`fast_exit`](Self::fast_exit)).
    #[inline(always)]
    fn fast_end(
        &self,
        ctx: Ctx,
        own: Held<'_, S, ThreadId>,
        peer: Held<'_, S, ThreadId>,
        ge: Held<'_, S, EndpointId>,
        regs: Regs,
    ) -> FastExit {
        let t = peer.key();
        drop(own);
        self.fast_peer_done(ctx, peer);
        if H::MERGE_RELEASES {
            let held = ge.keep_locked();
            self.fast_exit(ctx, t, regs, held)
        } else {
            drop(ge);
            self.fast_exit(ctx, t, regs, None)
        }
    }

    /// The fastpath's exit to `t`, the core's new current thread, with `regs`: the switch's
    /// bookkeeping done in the section, the root to load carried out (see [`FastExit`]).
    #[inline(always)]
    fn fast_exit(&self, ctx: Ctx, t: ThreadId, regs: Regs, held: Option<EndpointId>) -> FastExit {
        FastExit {
            exit: Exit {
                thread: Some(t),
                regs,
            },
            load: self.aspace_to_load(ctx, t),
            held,
        }
    }
}
