//! [`Mutex<L, T>`]: data protected by any [`KernelLock`], locked with an explicit CPU id.
//!
//! A raw [`KernelLock`] protects nothing by itself and must be released by hand with an `unsafe`
//! call. This wrapper owns the data, hands it out only through a [`MutexGuard`], and releases the
//! lock when the guard is dropped, on the CPU that took it:
//!
//! * The CPU id is an argument of [`Mutex::lock`], not a global hook as in the `lock_api`
//!   adapter: a kernel always knows which core it runs on, and locks that ignore the id (ticket)
//!   cost nothing extra.
//! * The guard remembers that CPU and unlocks with it. It is `!Send`: it cannot be moved to
//!   another thread (in a kernel: another CPU), which would make the unlock name the wrong CPU,
//!   corrupting a queue lock's per-CPU node. A kernel that could migrate a thread while it holds a
//!   guard must disable preemption around it, as for the raw lock.
//! * A guard is `Sync` when `T` is: sharing `&T` with other threads is as safe as for any `&T`.
//!
//! ```
//! use kernel_locks::{ClhLock, Mutex};
//!
//! static COUNTS: Mutex<ClhLock<4>, [u64; 4]> = Mutex::new(ClhLock::new(), [0; 4]);
//!
//! fn on_interrupt(cpu: usize) {
//!     let mut counts = COUNTS.lock(cpu); // CPU `cpu` now holds the CLH lock
//!     counts[cpu] += 1;
//! } // released here, by `cpu`
//!
//! on_interrupt(2);
//! on_interrupt(2);
//! assert_eq!(COUNTS.lock(0)[2], 2);
//! assert!(!COUNTS.is_locked());
//! ```

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use crate::raw::{CpuId, KernelLock};

/// A value of type `T` protected by the kernel lock `L`; see the [module documentation](self).
pub struct Mutex<L, T: ?Sized> {
    lock: L,
    data: UnsafeCell<T>,
}

// SAFETY: the lock `L` (a `KernelLock`, which is `Sync`) lets one CPU at a time reach the data,
// with acquire/release ordering between holders; the data moves between threads through the
// guards, so it must be `Send` (as for `std::sync::Mutex`).
unsafe impl<L: Sync, T: ?Sized + Send> Sync for Mutex<L, T> {}

impl<L, T> Mutex<L, T> {
    /// `value` protected by `lock`, which must be unlocked.
    pub const fn new(lock: L, value: T) -> Self {
        Self {
            lock,
            data: UnsafeCell::new(value),
        }
    }

    /// The protected value (no locking needed: `self` is owned).
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<L: KernelLock, T: ?Sized> Mutex<L, T> {
    /// Acquires the lock for `cpu`, waiting as long as needed; the guard releases it on drop.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range (see [`KernelLock::max_cpus`]).
    #[inline]
    #[track_caller]
    pub fn lock(&self, cpu: CpuId) -> MutexGuard<'_, L, T> {
        self.lock.lock(cpu);
        MutexGuard::new(self, cpu)
    }

    /// Acquires the lock for `cpu` if that is possible without waiting.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range.
    #[inline]
    #[track_caller]
    pub fn try_lock(&self, cpu: CpuId) -> Option<MutexGuard<'_, L, T>> {
        self.lock.try_lock(cpu).then(|| MutexGuard::new(self, cpu))
    }

    /// Whether some CPU holds the lock (a racy snapshot, see [`KernelLock::is_locked`]).
    pub fn is_locked(&self) -> bool {
        self.lock.is_locked()
    }

    /// The protected value, through exclusive access to the mutex (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// The lock itself, for its name, state or lock-specific operations (such as
    /// `RtmLock::defer`). Locking or unlocking it directly bypasses the guards: don't.
    pub fn raw(&self) -> &L {
        &self.lock
    }
}

impl<L: Default, T: Default> Default for Mutex<L, T> {
    fn default() -> Self {
        Self::new(L::default(), T::default())
    }
}

impl<L: KernelLock, T: ?Sized> fmt::Debug for Mutex<L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The data is not shown: reading it would need the lock, and a CPU id.
        f.debug_struct("Mutex")
            .field("lock", &self.lock.name())
            .field("locked", &self.lock.is_locked())
            .finish_non_exhaustive()
    }
}

/// Exclusive access to the data of a [`Mutex`], held by one CPU; releases the lock on drop.
///
/// `!Send`: the CPU that took the lock is the one that releases it.
#[must_use = "dropping the guard releases the lock at once"]
pub struct MutexGuard<'a, L: KernelLock, T: ?Sized> {
    mutex: &'a Mutex<L, T>,
    cpu: CpuId,
    /// A raw pointer makes the guard `!Send` (and `!Sync`, given back below when `T: Sync`).
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared guard only gives out `&T`, so sharing it is sharing `&T`, safe when `T: Sync`.
// The guard stays `!Send`.
unsafe impl<L: KernelLock, T: ?Sized + Sync> Sync for MutexGuard<'_, L, T> {}

impl<'a, L: KernelLock, T: ?Sized> MutexGuard<'a, L, T> {
    /// Wraps a lock that `cpu` has just acquired.
    #[inline(always)]
    fn new(mutex: &'a Mutex<L, T>, cpu: CpuId) -> Self {
        Self {
            mutex,
            cpu,
            _not_send: PhantomData,
        }
    }

    /// The CPU that holds the lock through this guard.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }
}

impl<L: KernelLock, T: ?Sized> Deref for MutexGuard<'_, L, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the guard's CPU holds the lock, so no other CPU accesses the data until drop.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<L: KernelLock, T: ?Sized> DerefMut for MutexGuard<'_, L, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<L: KernelLock, T: ?Sized> Drop for MutexGuard<'_, L, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the guard was created right after `self.cpu` acquired the lock, and the guard
        // cannot have moved to another thread (`!Send`); this is its only release.
        unsafe { self.mutex.lock.unlock(self.cpu) };
    }
}

impl<L: KernelLock, T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexGuard")
            .field("cpu", &self.cpu)
            .field("data", &&**self)
            .finish()
    }
}
