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

use crate::raw::{CpuBound, CpuId, KernelRwLock};

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

wrapper_items! {
    RwLock: KernelRwLock, "lock";
    /// Whether the lock is held in any mode (a racy snapshot, see
    /// [`KernelLock::is_locked`](crate::KernelLock::is_locked)).
    is_locked;
    /// The lock itself, for its name and state. Locking or unlocking it directly bypasses the
    /// guards: don't.
    raw;
}

impl<L: KernelRwLock, T: ?Sized> RwLock<L, T> {
    acquire_items!(" shared", RwLockReadGuard: read via read_lock, try_read via try_read_lock);
    acquire_items!(" exclusively", RwLockWriteGuard: write via lock, try_write via try_lock);
}

/// Shared access to the data of an [`RwLock`], held by one CPU; releases its hold on drop.
/// `!Send`.
#[must_use = "dropping the guard releases the lock at once"]
pub struct RwLockReadGuard<'a, L: KernelRwLock, T: ?Sized> {
    rwlock: &'a RwLock<L, T>,
    cpu: CpuId,
    /// Makes the guard `!Send` (and `!Sync`, given back when `T: Sync`): it belongs to `cpu`.
    _cpu_bound: CpuBound,
}

/// Exclusive access to the data of an [`RwLock`], held by one CPU; releases the lock on drop.
/// `!Send`.
#[must_use = "dropping the guard releases the lock at once"]
pub struct RwLockWriteGuard<'a, L: KernelRwLock, T: ?Sized> {
    rwlock: &'a RwLock<L, T>,
    cpu: CpuId,
    /// Makes the guard `!Send` (and `!Sync`, given back when `T: Sync`): it belongs to `cpu`.
    _cpu_bound: CpuBound,
}

guard_items!(RwLockReadGuard { rwlock: RwLock }: KernelRwLock, " shared", read_unlock);
guard_items!(RwLockWriteGuard { rwlock: RwLock }: KernelRwLock, " exclusively", unlock, mut);
