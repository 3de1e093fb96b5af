//! `lock_api` adapters: [`lock_api::Mutex`] and [`lock_api::RwLock`] over any lock of this crate.
//!
//! `lock_api`'s raw locks take no CPU id, so the embedding kernel says how to find the current CPU
//! by implementing [`CurrentCpu`] (typically by reading a per-core register or per-CPU variable).
//! Then, for example:
//!
//! ```
//! use kernel_locks::lock_api_adapter::{CurrentCpu, Mutex};
//! use kernel_locks::{CpuId, TicketLock};
//!
//! struct ThisCpu;
//! impl CurrentCpu for ThisCpu {
//!     fn current() -> CpuId {
//!         0 // a real kernel reads its per-CPU register here
//!     }
//! }
//!
//! static COUNTER: Mutex<TicketLock, ThisCpu, u64> = Mutex::new(0);
//! *COUNTER.lock() += 1;
//! assert_eq!(*COUNTER.lock(), 1);
//! ```
//!
//! The guards are `!Send` ([`lock_api::GuardNoSend`]): a lock must be released by the CPU that
//! took it, as [`KernelLock`] requires. A kernel that could migrate a thread while it holds a guard
//! must disable preemption around it. Debug builds record the CPU that took a mutex (or the write
//! side of a rwlock) and panic if the guard is dropped on another CPU. For shared guards there is
//! no single owner to record; the lock's own debug checks catch a drop on a CPU that holds no
//! shared hold (as [`BrLock`](crate::BrLock) does).
//!
//! Only locks that implement [`ConstInit`] can be used, because `lock_api` needs a `const INIT`.
//! This module is not available under loom.

use core::marker::PhantomData;

use crate::raw::{ConstInit, CpuId, KernelLock, KernelRwLock};

/// How the adapters find the CPU they run on; implemented by the embedding kernel.
pub trait CurrentCpu {
    /// The index of the calling CPU, as passed to [`KernelLock`] operations. The caller runs with
    /// preemption disabled (or cannot migrate) while it holds a lock.
    fn current() -> CpuId;
}

/// Debug builds: which CPU holds the exclusive side (its id + 1, 0 when none). Zero-sized in
/// release builds.
struct Owner {
    #[cfg(debug_assertions)]
    cpu_plus_one: core::sync::atomic::AtomicUsize,
}

impl Owner {
    /// No holder.
    const fn none() -> Self {
        Self {
            #[cfg(debug_assertions)]
            cpu_plus_one: core::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Records `cpu` as the holder (right after it acquired the lock).
    #[inline(always)]
    fn set(&self, _cpu: CpuId) {
        // Relaxed: the field is written and read only by the holder; between holders the lock's
        // own acquire/release orders these accesses.
        #[cfg(debug_assertions)]
        self.cpu_plus_one
            .store(_cpu + 1, core::sync::atomic::Ordering::Relaxed);
    }

    /// Panics unless `cpu` is the recorded holder; then clears the record (right before release).
    #[inline(always)]
    #[track_caller]
    fn check_and_clear(&self, _cpu: CpuId) {
        #[cfg(debug_assertions)]
        {
            use core::sync::atomic::Ordering::Relaxed;
            let owner = self.cpu_plus_one.load(Relaxed);
            if owner != _cpu + 1 {
                match owner.checked_sub(1) {
                    Some(owner) => panic!(
                        "lock_api adapter: guard taken on CPU {owner} released on CPU {_cpu} \
                         (a lock must be released by the CPU that took it)"
                    ),
                    None => panic!("lock_api adapter: unlock of a lock that is not held"),
                }
            }
            self.cpu_plus_one.store(0, Relaxed);
        }
    }
}

/// A [`lock_api::RawMutex`] over the kernel lock `L`, finding the CPU with `C`.
pub struct RawKernelMutex<L, C> {
    inner: L,
    owner: Owner,
    _cpu: PhantomData<fn() -> C>,
}

impl<L, C> RawKernelMutex<L, C> {
    /// Wraps `inner`, which must be unlocked.
    pub const fn from_lock(inner: L) -> Self {
        Self {
            inner,
            owner: Owner::none(),
            _cpu: PhantomData,
        }
    }

    /// The wrapped kernel lock (for its name and state; do not lock it directly).
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

// SAFETY: exclusion and orderings are those of the `KernelLock` `inner`, which is locked and
// unlocked by the same CPU because `C::current()` names the running CPU and guards are `!Send`.
unsafe impl<L: KernelLock + ConstInit, C: CurrentCpu> lock_api::RawMutex for RawKernelMutex<L, C> {
    #[allow(clippy::declare_interior_mutable_const)] // as in `lock_api`: only used to initialise
    const INIT: Self = Self::from_lock(L::INIT);

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock(&self) {
        lock_exclusive::<L, C>(&self.inner, &self.owner);
    }

    #[inline]
    fn try_lock(&self) -> bool {
        try_lock_exclusive::<L, C>(&self.inner, &self.owner)
    }

    #[inline]
    #[track_caller]
    unsafe fn unlock(&self) {
        // SAFETY: the caller (a guard) holds the mutex, taken on this CPU (guards are `!Send`).
        unsafe { unlock_exclusive::<L, C>(&self.inner, &self.owner) };
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

/// A [`lock_api::RawRwLock`] over the reader-writer kernel lock `L`, finding the CPU with `C`.
pub struct RawKernelRwLock<L, C> {
    inner: L,
    owner: Owner,
    _cpu: PhantomData<fn() -> C>,
}

impl<L, C> RawKernelRwLock<L, C> {
    /// Wraps `inner`, which must be unlocked.
    pub const fn from_lock(inner: L) -> Self {
        Self {
            inner,
            owner: Owner::none(),
            _cpu: PhantomData,
        }
    }

    /// The wrapped kernel lock (for its name and state; do not lock it directly).
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

// SAFETY: exclusion and orderings are those of the `KernelRwLock` `inner` (its `KernelLock`
// operations are the exclusive side), used by the running CPU only, as for `RawKernelMutex`.
unsafe impl<L: KernelRwLock + ConstInit, C: CurrentCpu> lock_api::RawRwLock
    for RawKernelRwLock<L, C>
{
    #[allow(clippy::declare_interior_mutable_const)] // as in `lock_api`: only used to initialise
    const INIT: Self = Self::from_lock(L::INIT);

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        self.inner.read_lock(C::current());
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.inner.try_read_lock(C::current())
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller (a read guard) holds the lock shared, taken on this CPU (guards are
        // `!Send`).
        unsafe { self.inner.read_unlock(C::current()) };
    }

    #[inline]
    fn lock_exclusive(&self) {
        lock_exclusive::<L, C>(&self.inner, &self.owner);
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        try_lock_exclusive::<L, C>(&self.inner, &self.owner)
    }

    #[inline]
    #[track_caller]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller (a write guard) holds the lock exclusively, taken on this CPU
        // (guards are `!Send`).
        unsafe { unlock_exclusive::<L, C>(&self.inner, &self.owner) };
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

/// Takes `inner` exclusively on the running CPU and records it as the owner (debug builds).
#[inline]
fn lock_exclusive<L: KernelLock, C: CurrentCpu>(inner: &L, owner: &Owner) {
    let cpu = C::current();
    inner.lock(cpu);
    owner.set(cpu);
}

/// Tries to take `inner` exclusively on the running CPU; records the owner on success.
#[inline]
fn try_lock_exclusive<L: KernelLock, C: CurrentCpu>(inner: &L, owner: &Owner) -> bool {
    let cpu = C::current();
    let locked = inner.try_lock(cpu);
    if locked {
        owner.set(cpu);
    }
    locked
}

/// Releases `inner` on the running CPU; debug builds panic if another CPU took it.
///
/// # Safety
/// The running CPU holds `inner` exclusively, taken through [`lock_exclusive`] or
/// [`try_lock_exclusive`].
#[inline]
#[track_caller]
unsafe fn unlock_exclusive<L: KernelLock, C: CurrentCpu>(inner: &L, owner: &Owner) {
    let cpu = C::current();
    owner.check_and_clear(cpu);
    // SAFETY: per this function's contract the running CPU `cpu` holds `inner` (debug builds
    // checked the recorded owner just above).
    unsafe { inner.unlock(cpu) };
}

/// A mutex protecting a `T` with the kernel lock `L`; `C` finds the current CPU.
pub type Mutex<L, C, T> = lock_api::Mutex<RawKernelMutex<L, C>, T>;

/// The guard of a [`Mutex`].
pub type MutexGuard<'a, L, C, T> = lock_api::MutexGuard<'a, RawKernelMutex<L, C>, T>;

/// A reader-writer lock protecting a `T` with the kernel lock `L`; `C` finds the current CPU.
pub type RwLock<L, C, T> = lock_api::RwLock<RawKernelRwLock<L, C>, T>;

/// The shared guard of an [`RwLock`].
pub type RwLockReadGuard<'a, L, C, T> = lock_api::RwLockReadGuard<'a, RawKernelRwLock<L, C>, T>;

/// The exclusive guard of an [`RwLock`].
pub type RwLockWriteGuard<'a, L, C, T> = lock_api::RwLockWriteGuard<'a, RawKernelRwLock<L, C>, T>;
