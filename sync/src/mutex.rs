//! [`Mutex<L, T>`]: data protected by any [`KernelLock`], locked with an explicit CPU id.
//!
//! A raw [`KernelLock`] protects nothing by itself and must be released by hand with an `unsafe`
//! call. This wrapper owns the data, hands it out only through a [`MutexGuard`], and releases the
//! lock when the guard is dropped, on the CPU that took it:
//!
//! * The CPU id is an argument of [`Mutex::lock`], not a global hook as in the `lock_api`
//!   adapter: a kernel always knows which core it runs on, and locks that ignore the id (ticket)
//!   cost nothing extra.
//! * The guard remembers that CPU and unlocks with it. It is `!Send` (its
//!   [`CpuBound`] marker, which the compiler names when a guard is moved): it
//!   cannot be moved to another thread (in a kernel: another CPU), which would make the unlock
//!   name the wrong CPU, corrupting a queue lock's per-CPU node. A kernel that could migrate a thread while it holds a
//!   guard must disable preemption around it, as for the raw lock.
//! * A guard is `Sync` when `T` is: sharing `&T` with other threads is as safe as for any `&T`.
//!
//! ```
//! use kernel_locks::{ClhLock, Mutex};
//!
//! static COUNTS: Mutex<ClhLock<4>, [u64; 4]> = Mutex::new(ClhLock::new(), [0; 4]);
//!
//! fn on_syscall(cpu: usize) {
//!     let mut counts = COUNTS.lock(cpu); // CPU `cpu` now holds the CLH lock
//!     counts[cpu] += 1;
//! } // released here, by `cpu`
//!
//! on_syscall(2);
//! on_syscall(2);
//! assert_eq!(COUNTS.lock(0)[2], 2);
//! assert!(!COUNTS.is_locked());
//! ```
//!
//! Data that an interrupt handler updates too is locked everywhere with the CPU's interrupts
//! masked ([`Mutex::lock_irqsave`], see [`irq`](crate::irq)): an interrupt taken while its CPU
//! holds the lock would otherwise spin on it forever. In a kernel `I` is
//! [`irq::Native`](crate::irq::Native); this example runs on a host with the test double.
//!
//! ```
//! # #[cfg(feature = "testing")] fn main() {
//! use kernel_locks::irq::{testing::TestInterrupts as I, Interrupts};
//! use kernel_locks::{ClhLock, Mutex};
//!
//! static COUNTS: Mutex<ClhLock<4>, [u64; 4]> = Mutex::new(ClhLock::new(), [0; 4]);
//!
//! fn on_interrupt(cpu: usize) {
//!     let mut counts = COUNTS.lock_irqsave::<I>(cpu); // masked, then locked
//!     counts[cpu] += 1;
//! } // released, then the interrupt state restored
//!
//! I::raise(|| on_interrupt(2));
//! let counts = COUNTS.lock_irqsave::<I>(0);
//! I::raise(|| on_interrupt(2)); // pending: runs when `counts` is dropped
//! assert_eq!(counts[2], 1);
//! drop(counts);
//! assert_eq!(COUNTS.lock(0)[2], 2);
//! assert!(I::are_enabled() && !COUNTS.is_locked());
//! # }
//! # #[cfg(not(feature = "testing"))] fn main() {}
//! ```

use core::cell::UnsafeCell;

use crate::raw::{CpuBound, CpuId, KernelLock};

/// A value of type `T` protected by the kernel lock `L`; see the [module documentation](self).
pub struct Mutex<L, T: ?Sized> {
    lock: L,
    data: UnsafeCell<T>,
}

// SAFETY: the lock `L` (a `KernelLock`, which is `Sync`) lets one CPU at a time reach the data,
// with acquire/release ordering between holders; the data moves between threads through the
// guards, so it must be `Send` (as for `std::sync::Mutex`).
unsafe impl<L: Sync, T: ?Sized + Send> Sync for Mutex<L, T> {}

wrapper_items! {
    Mutex: KernelLock, "mutex";
    /// Whether some CPU holds the lock (a racy snapshot, see [`KernelLock::is_locked`]).
    is_locked;
    /// The lock itself, for its name, state or lock-specific operations (such as
    /// `RtmLock::defer`). Locking or unlocking it directly bypasses the guards: don't.
    raw;
}

impl<L: KernelLock, T: ?Sized> Mutex<L, T> {
    acquire_items!("", MutexGuard: lock via lock, try_lock via try_lock);
}

/// Exclusive access to the data of a [`Mutex`], held by one CPU; releases the lock on drop.
///
/// `!Send`: the CPU that took the lock is the one that releases it.
#[must_use = "dropping the guard releases the lock at once"]
pub struct MutexGuard<'a, L: KernelLock, T: ?Sized> {
    mutex: &'a Mutex<L, T>,
    cpu: CpuId,
    /// Makes the guard `!Send` (and `!Sync`, given back when `T: Sync`): it belongs to `cpu`.
    _cpu_bound: CpuBound,
}

guard_items!(MutexGuard { mutex: Mutex }: KernelLock, "", unlock, mut);
