//! Thread and address-space management (exclusive sections only): resume, suspend, delete,
//! priority, affinity; address-space deletion and reuse.
//!
//! # Deleting or suspending a thread that runs on another core
//! A core's `current` thread is only ever switched out by that core. So when core A deletes
//! (or suspends, or moves) thread T that is the current thread of core B:
//! 1. A removes T from every queue and reply link, removes every capability to it, marks it
//!    `Zombie` (deleted) or `Inactive` (suspended) or changes its core, and records a
//!    Reschedule IPI to B, sent after A leaves its critical section;
//! 2. B, at its next kernel entry (the IPI, or a system call T made in the meantime, which is
//!    then not executed and returns `Interrupted`), finds that T may not run there any more and
//!    switches to its next thread or idle (and enqueues a moved T on its new core);
//! 3. the TCB slot of a zombie is reused only once no core has it as current.
//!
//! Nothing can reach T after step 1 (no capability, queue or reply link names it), so B
//! finishing the switch later is safe; this is the seL4 paper's "kick the remote core to idle"
//! without making A wait.
//!
//! # Deleting an address space
//! `DeleteAddressSpace` chooses to **refuse** ([`Error::InUse`]) while a live thread (of any
//! state, suspended included) is bound to the address space: the caller deletes those threads
//! first (above), which kicks the cores running them. Deleted threads that some core still has
//! as its current thread (zombies) are allowed; they are the reason for the steps below. In
//! its exclusive section the deleting core A:
//! 1. removes every user leaf of its page tables ([`Hal::sweep`], the image loader's too; the
//!    emptied page tables return to the pool after the shoot-down), and removes every
//!    capability to the address space (nothing can name it, map into it or create a thread in
//!    it any more);
//! 2. requests a TLB shoot-down of every other core whose `as_active` flag is set (every core
//!    that loaded it and has not flushed its whole TLB since, idle cores included), flushes its own
//!    TLB after the section, and records the requested generations in the address space, now
//!    `Dying`;
//! 3. after its section, waits for every acknowledgement before the call returns (see the
//!    shoot-down protocol in `kernel/shootdown.rs`). A core acknowledges at the end of a kernel entry, so
//!    it has entered the kernel since the deletion and dropped any zombie it ran.
//!
//! The slot is **reused** (`CreateAddressSpace`, same root, whose tables were reset) only when
//! it is `Dying`, every recorded generation was acknowledged, and no core has a thread of that
//! address space as its current thread (a core that acknowledged at the end of an entry which
//! had already picked a zombie may still run it in user mode, on empty page tables, until its
//! next entry). From then on no core can run on it or hold translations of the old mappings:
//! a core that still has the root loaded (idle) flushed after the tables were cleared, and
//! cleared tables add nothing to a TLB.

use kernel_locks::CpuId;

use crate::cap::ObjRef;
use crate::config::*;
use crate::error::Error;
use crate::hal::{Hal, IpiKind, SweepAction};
use crate::ids::*;
use crate::kernel::{AsLife, Ctx, Kernel, Life, RunQueue, ThreadState};
use crate::strategy::Strategy;
use crate::syscall::err_regs;

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// Whether `t` is in its core's run queue (runnable and no core's current).
    fn queued(&self, ctx: Ctx, t: ThreadId) -> bool {
        self.ipc(&self.hold(ctx, t), |i| i.state) == ThreadState::Runnable
            && self.current_anywhere(ctx, t).is_none()
    }

    /// IPI to the core where `t` is current, if that is another core.
    fn kick(&self, ctx: Ctx, t: ThreadId) {
        if let Some(c) = self.current_anywhere(ctx, t) {
            if c != ctx.cpu {
                self.act(ctx, |a| a.ipi(c, IpiKind::Reschedule));
            }
        }
    }

    /// Makes an inactive thread runnable.
    pub(crate) fn resume(&self, ctx: Ctx, t: ThreadId) {
        let g = self.hold(ctx, t);
        if self.ipc(&g, |i| i.state) == ThreadState::Inactive {
            self.ipc(&g, |i| i.state = ThreadState::Runnable);
            drop(g);
            self.wake(ctx, t);
        }
    }

    /// Takes `t` out of whatever it waits in; a blocked call ends with `Interrupted`.
    fn detach(&self, ctx: Ctx, t: ThreadId) {
        let state = self.ipc(&self.hold(ctx, t), |i| i.state);
        match state {
            ThreadState::Inactive => return,
            ThreadState::Runnable => {
                if self.queued(ctx, t) {
                    self.rq_remove(&self.hold(ctx, RunQueue(self.conf(t).core)), t);
                }
                self.ipc(&self.hold(ctx, t), |i| i.state = ThreadState::Inactive);
                return;
            }
            ThreadState::BlockedSend(e) | ThreadState::BlockedRecv(e) => {
                let g = self.hold(ctx, e);
                let mut q = self.ep(&g, |x| x.queue);
                self.q_remove(&self.qlinks, &mut q, t);
                self.ep(&g, |x| x.queue = q);
            }
            ThreadState::BlockedNotification(n) => {
                let g = self.hold(ctx, n);
                let mut q = self.ntfn(&g, |x| x.waiters);
                self.q_remove(&self.qlinks, &mut q, t);
                self.ntfn(&g, |x| x.waiters = q);
            }
            ThreadState::BlockedReply => {
                let server = self.ipc(&self.hold(ctx, t), |i| i.server);
                if let Some(server) = server {
                    self.ipc(&self.hold(ctx, server), |i| i.reply_to = None);
                }
            }
        }
        self.ipc(&self.hold(ctx, t), |i| {
            if !i.fault {
                i.ret = err_regs(Error::Interrupted);
            }
            i.fault = false;
            i.server = None;
            i.state = ThreadState::Inactive;
        });
    }

    /// Suspends `t` (kicking its core if it runs elsewhere).
    pub(crate) fn suspend(&self, ctx: Ctx, t: ThreadId) {
        self.detach(ctx, t);
        self.kick(ctx, t);
    }

    /// Deletes `t`: detach, answer its pending caller with `ReplyDropped`, remove every
    /// capability to it and empty its CSpace; zombie until its core drops it.
    pub(crate) fn delete(&self, ctx: Ctx, t: ThreadId) {
        self.detach(ctx, t);
        let caller = self.ipc(&self.hold(ctx, t), |i| i.reply_to);
        if let Some(c) = caller {
            self.answer(ctx, t, c, Err(Error::ReplyDropped));
        }
        self.drop_caps_to(ctx, |obj| obj == ObjRef::Thread(t));
        for slot in CapSlot::all() {
            self.take_cap(ctx, t, slot);
        }
        let running = self.current_anywhere(ctx, t);
        self.conf_mut(ctx, t, |c| {
            c.life = if running.is_some() {
                Life::Zombie
            } else {
                Life::Free
            };
            c.pager = None;
        });
        self.kick(ctx, t);
    }

    pub(crate) fn set_priority(&self, ctx: Ctx, t: ThreadId, priority: usize) {
        let priority = priority % NUM_PRIOS;
        let core = self.conf(t).core;
        if self.queued(ctx, t) {
            self.rq_remove(&self.hold(ctx, RunQueue(core)), t);
            self.conf_mut(ctx, t, |c| c.set_priority(priority));
            self.rq_push(&self.hold(ctx, RunQueue(core)), t);
            if core != ctx.cpu {
                self.act(ctx, |a| a.ipi(core, IpiKind::Reschedule));
            }
        } else {
            self.conf_mut(ctx, t, |c| c.set_priority(priority));
            self.kick(ctx, t);
        }
    }

    pub(crate) fn set_affinity(&self, ctx: Ctx, t: ThreadId, core: CpuId) {
        let old = self.conf(t).core;
        if self.queued(ctx, t) {
            self.rq_remove(&self.hold(ctx, RunQueue(old)), t);
            self.conf_mut(ctx, t, |c| c.core = core);
            self.rq_push(&self.hold(ctx, RunQueue(core)), t);
            if core != ctx.cpu {
                self.act(ctx, |a| a.ipi(core, IpiKind::Reschedule));
            }
        } else {
            self.conf_mut(ctx, t, |c| c.core = core);
            self.kick(ctx, t);
        }
    }

    /// Whether a live thread is bound to address space `a` (decode of `DeleteAddressSpace`).
    pub(crate) fn aspace_in_use(&self, a: AsId) -> bool {
        ThreadId::all().any(|t| {
            let c = self.conf(t);
            c.life == Life::Alive && c.aspace == Some(a)
        })
    }

    /// A deleted address-space slot that no core can run on or cache any more (decode of
    /// `CreateAddressSpace`; `ctx.global`).
    pub(crate) fn reusable_aspace(&self, ctx: Ctx) -> Option<AsId> {
        let n = self.meta(|m| m.n_aspaces);
        AsId::all().take(n).find(|&a| {
            let (life, wait) = self.aspace(a, |s| (s.life, s.wait));
            life == AsLife::Dying
                && wait.iter().enumerate().all(|(c, &g)| self.acked(c, g))
                && ThreadId::all().all(|t| {
                    self.conf(t).aspace != Some(a) || self.current_anywhere(ctx, t).is_none()
                })
        })
    }

    /// Deletes address space `a` (no live thread is bound to it): see the module docs.
    pub(crate) fn delete_aspace(&self, ctx: Ctx, a: AsId) {
        let root = self.aspace(a, |s| s.root);
        // Every user leaf goes, the image loader's too; emptied page tables are reclaimed after
        // the shoot-down.
        self.hal.sweep(ctx.cpu, root, &mut |_| SweepAction::Remove);
        self.act(ctx, |x| x.set_reclaim());
        self.drop_caps_to(ctx, |obj| obj == ObjRef::AddressSpace(a));
        let wait = self.shoot_down(ctx, a, root, None);
        self.aspace_mut(ctx, a, |s| {
            s.life = AsLife::Dying;
            s.wait = wait;
        });
    }

    /// Makes a reusable deleted slot an empty, live address space again.
    pub(crate) fn revive_aspace(&self, ctx: Ctx, a: AsId) {
        self.aspace_mut(ctx, a, |s| {
            s.life = AsLife::Alive;
            s.wait = [0; MAX_CPUS];
        });
    }
}
