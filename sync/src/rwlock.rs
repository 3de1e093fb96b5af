//! [`RwLock<L, T>`]: data protected by a reader-writer [`KernelRwLock`] (such as
//! [`BrLock`](crate::BrLock)), locked with an explicit CPU id.
//!
//! The reader-writer counterpart of [`Mutex`](crate::Mutex), with the same rules: the CPU id is
//! an argument, every guard remembers it and releases the lock with it on drop, and guards are
//! `!Send` so that the CPU that took a hold is the one that gives it back. Readers get `&T`
//! (possibly many CPUs at once), a writer `&mut T` (alone).
//!
//! ```
//! use kernel_locks::{BrLock, RwLock};
//!
//! /// Read on every system call, written when a route changes: a big-reader lock.
//! static ROUTES: RwLock<BrLock<4>, [u16; 8]> = RwLock::new(BrLock::new(), [0; 8]);
//!
//! ROUTES.write(0)[3] = 7; // CPU 0 writes (alone)
//! let on_cpu_1 = ROUTES.read(1); // CPUs 1 and 2 read at the same time
//! let on_cpu_2 = ROUTES.read(2);
//! assert_eq!(on_cpu_1[3] + on_cpu_2[3], 14);
//! assert!(ROUTES.try_write(3).is_none(), "a writer got in beside readers");
//! ```

use core::cell::UnsafeCell;
use core::fmt;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use crate::raw::{CpuId, KernelRwLock};

/// A value of type `T` protected by the reader-writer kernel lock `L`; see the
/// [module documentation](self).
pub struct RwLock<L, T: ?Sized> {
    lock: L,
    data: UnsafeCell<T>,
}

// SAFETY: `L` lets either one writer or any number of readers reach the data, with
// acquire/release ordering between them. Readers on several CPUs share `&T` (so `T: Sync`), and
// a writer may replace the value that another thread created or will drop (so `T: Send`), as for
// `std::sync::RwLock`.
unsafe impl<L: Sync, T: ?Sized + Send + Sync> Sync for RwLock<L, T> {}

impl<L, T> RwLock<L, T> {
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

impl<L: KernelRwLock, T: ?Sized> RwLock<L, T> {
    /// Acquires the lock shared for `cpu`, waiting as long as needed.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range (see [`KernelLock::max_cpus`](crate::KernelLock)).
    #[inline]
    #[track_caller]
    pub fn read(&self, cpu: CpuId) -> RwLockReadGuard<'_, L, T> {
        self.lock.read_lock(cpu);
        RwLockReadGuard {
            rwlock: self,
            cpu,
            _not_send: PhantomData,
        }
    }

    /// Acquires the lock shared for `cpu` if possible without waiting.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range.
    #[inline]
    #[track_caller]
    pub fn try_read(&self, cpu: CpuId) -> Option<RwLockReadGuard<'_, L, T>> {
        self.lock.try_read_lock(cpu).then(|| RwLockReadGuard {
            rwlock: self,
            cpu,
            _not_send: PhantomData,
        })
    }

    /// Acquires the lock exclusively for `cpu`, waiting as long as needed.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range.
    #[inline]
    #[track_caller]
    pub fn write(&self, cpu: CpuId) -> RwLockWriteGuard<'_, L, T> {
        self.lock.lock(cpu);
        RwLockWriteGuard {
            rwlock: self,
            cpu,
            _not_send: PhantomData,
        }
    }

    /// Acquires the lock exclusively for `cpu` if possible without waiting.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range.
    #[inline]
    #[track_caller]
    pub fn try_write(&self, cpu: CpuId) -> Option<RwLockWriteGuard<'_, L, T>> {
        self.lock.try_lock(cpu).then(|| RwLockWriteGuard {
            rwlock: self,
            cpu,
            _not_send: PhantomData,
        })
    }

    /// Whether the lock is held in any mode (a racy snapshot, see
    /// [`KernelLock::is_locked`](crate::KernelLock::is_locked)).
    pub fn is_locked(&self) -> bool {
        self.lock.is_locked()
    }

    /// The protected value, through exclusive access to the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// The lock itself, for its name and state. Locking or unlocking it directly bypasses the
    /// guards: don't.
    pub fn raw(&self) -> &L {
        &self.lock
    }
}

impl<L: Default, T: Default> Default for RwLock<L, T> {
    fn default() -> Self {
        Self::new(L::default(), T::default())
    }
}

impl<L: KernelRwLock, T: ?Sized> fmt::Debug for RwLock<L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("lock", &self.lock.name())
            .field("locked", &self.lock.is_locked())
            .finish_non_exhaustive()
    }
}

/// Shared access to the data of an [`RwLock`], held by one CPU; releases its hold on drop.
/// `!Send`.
#[must_use = "dropping the guard releases the lock at once"]
pub struct RwLockReadGuard<'a, L: KernelRwLock, T: ?Sized> {
    rwlock: &'a RwLock<L, T>,
    cpu: CpuId,
    /// A raw pointer makes the guard `!Send` (and `!Sync`, given back below when `T: Sync`).
    _not_send: PhantomData<*const ()>,
}

/// Exclusive access to the data of an [`RwLock`], held by one CPU; releases the lock on drop.
/// `!Send`.
#[must_use = "dropping the guard releases the lock at once"]
pub struct RwLockWriteGuard<'a, L: KernelRwLock, T: ?Sized> {
    rwlock: &'a RwLock<L, T>,
    cpu: CpuId,
    /// A raw pointer makes the guard `!Send` (and `!Sync`, given back below when `T: Sync`).
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared reference to either guard only gives out `&T`; safe to share when `T: Sync`.
unsafe impl<L: KernelRwLock, T: ?Sized + Sync> Sync for RwLockReadGuard<'_, L, T> {}
// SAFETY: as above: `&RwLockWriteGuard` only gives out `&T`.
unsafe impl<L: KernelRwLock, T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, L, T> {}

impl<L: KernelRwLock, T: ?Sized> RwLockReadGuard<'_, L, T> {
    /// The CPU that holds the lock shared through this guard.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }
}

impl<L: KernelRwLock, T: ?Sized> RwLockWriteGuard<'_, L, T> {
    /// The CPU that holds the lock exclusively through this guard.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }
}

impl<L: KernelRwLock, T: ?Sized> Deref for RwLockReadGuard<'_, L, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the guard's CPU holds the lock shared: no writer until it is released.
        unsafe { &*self.rwlock.data.get() }
    }
}

impl<L: KernelRwLock, T: ?Sized> Deref for RwLockWriteGuard<'_, L, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the guard's CPU holds the lock exclusively.
        unsafe { &*self.rwlock.data.get() }
    }
}

impl<L: KernelRwLock, T: ?Sized> DerefMut for RwLockWriteGuard<'_, L, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard's CPU holds the lock exclusively; `&mut self` makes this the only
        // reference through the guard.
        unsafe { &mut *self.rwlock.data.get() }
    }
}

impl<L: KernelRwLock, T: ?Sized> Drop for RwLockReadGuard<'_, L, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `self.cpu` took the lock shared when the guard was made, the guard did not
        // move to another thread (`!Send`), and this is its only release.
        unsafe { self.rwlock.lock.read_unlock(self.cpu) };
    }
}

impl<L: KernelRwLock, T: ?Sized> Drop for RwLockWriteGuard<'_, L, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `self.cpu` took the lock exclusively when the guard was made, the guard did
        // not move to another thread (`!Send`), and this is its only release.
        unsafe { self.rwlock.lock.unlock(self.cpu) };
    }
}

impl<L: KernelRwLock, T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLockReadGuard")
            .field("cpu", &self.cpu)
            .field("data", &&**self)
            .finish()
    }
}

impl<L: KernelRwLock, T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, L, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLockWriteGuard")
            .field("cpu", &self.cpu)
            .field("data", &&**self)
            .finish()
    }
}
