//! Deferred work: a fixed-capacity per-CPU FIFO of `(fn(usize), usize)` calls that
//! [`RtmLock`](super::RtmLock) runs after the critical section has ended.
//!
//! A critical section that may run inside a transaction must not execute instructions that abort
//! every transaction (`MOV CR3`, segment loads, `WRMSR` to the APIC, port I/O, `INVLPG`...) nor do
//! anything that cannot be rolled back (sending an IPI, acknowledging an interrupt). It queues
//! them here instead; `unlock` runs them after `XEND` (or after releasing the fallback lock), on
//! the same CPU. Queuing is only memory writes to the CPU's own lines, so a transaction can do it:
//! if the transaction aborts, the hardware rolls the queue back with everything else (and the lock
//! clears the queue on every abort, for engines that cannot roll back).

use core::fmt;

use super::AtomicPtr;
use crate::shim::{AtomicUsize, Ordering::Relaxed};

/// How many calls one CPU can defer in one critical section.
pub const DEFER_CAPACITY: usize = 8;

/// [`RtmLock::defer`](super::RtmLock::defer) found the CPU's queue full
/// ([`DEFER_CAPACITY`] entries); the call was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeferFull;

impl fmt::Display for DeferFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "deferred-work queue full ({DEFER_CAPACITY} entries)")
    }
}

/// The placeholder stored in empty slots, so that every slot always holds a valid `fn(usize)`.
fn nothing(_: usize) {}

/// One queued call. The function is kept as a raw pointer in an atomic (fn pointers have no
/// atomic type); it is always a pointer obtained from a `fn(usize)`.
struct Slot {
    f: AtomicPtr<()>,
    arg: AtomicUsize,
}

impl Slot {
    maybe_const_fn! {
        fn new() -> Self {
            Self { f: AtomicPtr::new(nothing as fn(usize) as *mut ()), arg: AtomicUsize::new(0) }
        }
    }
}

/// A CPU's queue. Only its own CPU touches it (statistics readers do not), so every access is
/// Relaxed: there is no other thread to order against. Atomics rather than `UnsafeCell` keep a
/// caller that passes a wrong `CpuId` from causing a data race (it only mixes up queues).
pub(crate) struct DeferQueue {
    len: AtomicUsize,
    slots: [Slot; DEFER_CAPACITY],
}

impl DeferQueue {
    maybe_const_fn! {
        /// An empty queue.
        pub(crate) fn new() -> Self {
            Self { len: AtomicUsize::new(0), slots: array_init!(DEFER_CAPACITY, Slot::new()) }
        }
    }

    /// Appends a call, or reports that the queue is full.
    #[inline]
    pub(crate) fn push(&self, f: fn(usize), arg: usize) -> Result<(), DeferFull> {
        let len = self.len.load(Relaxed);
        let slot = self.slots.get(len).ok_or(DeferFull)?;
        slot.f.store(f as *mut (), Relaxed);
        slot.arg.store(arg, Relaxed);
        self.len.store(len + 1, Relaxed);
        Ok(())
    }

    /// Drops every queued call.
    #[inline]
    pub(crate) fn clear(&self) {
        self.len.store(0, Relaxed);
    }

    /// Empties the queue first, then runs the calls it held in FIFO order. Taking them out first
    /// lets a call lock the same lock again and defer more work without disturbing this run.
    #[inline]
    pub(crate) fn run(&self) {
        let len = self.len.load(Relaxed);
        if len != 0 {
            self.run_queued(len);
        }
    }

    /// [`run`](Self::run) for a queue of `len` calls.
    #[inline(never)]
    fn run_queued(&self, len: usize) {
        let mut calls: [(fn(usize), usize); DEFER_CAPACITY] = [(nothing, 0); DEFER_CAPACITY];
        for (call, slot) in calls.iter_mut().zip(&self.slots).take(len) {
            let f = slot.f.load(Relaxed);
            // SAFETY: every slot always holds a pointer made from a `fn(usize)`: the placeholder
            // from `Slot::new` or the argument of `push`. Converting it back yields that same
            // function pointer.
            *call = (
                unsafe { core::mem::transmute::<*mut (), fn(usize)>(f) },
                slot.arg.load(Relaxed),
            );
        }
        self.clear();
        for (f, arg) in &calls[..len] {
            f(*arg);
        }
    }
}
