//! `lock_api` adapters: `lock_api`'s `Mutex` and `RwLock` over any lock of this crate.
//!
//! Two `lock_api` versions, each behind its own feature, over the same raw locks
//! ([`RawKernelMutex`], [`RawKernelRwLock`]) and the same [`CurrentCpu`]:
//!
//! | feature | `lock_api` | types | Rust |
//! |---------|------------|-------|------|
//! | `lock_api` | 0.4 | `v04`, also at this module's root | 1.85 (this crate's MSRV) |
//! | `lock_api_05` | 0.5 | `v05` | 1.95 (`lock_api` 0.5's own `rust-version`) |
//!
//! `lock_api`'s raw locks take no CPU id, so the embedding kernel says how to find the current CPU
//! by implementing [`CurrentCpu`] (typically by reading a per-core register or per-CPU variable).
//! Then, for example:
//!
//! ```
//! use kernel_locks::lock_api_adapter::CurrentCpu;
//! use kernel_locks::{CpuId, TicketLock};
//!
//! struct ThisCpu;
//! impl CurrentCpu for ThisCpu {
//!     fn current() -> CpuId {
//!         0 // a real kernel reads its per-CPU register here
//!     }
//! }
//!
//! # #[cfg(feature = "lock_api")] {
//! // `lock_api` 0.4 (feature `lock_api`):
//! use kernel_locks::lock_api_adapter::Mutex;
//!
//! static COUNTER: Mutex<TicketLock, ThisCpu, u64> = Mutex::new(0);
//! *COUNTER.lock() += 1;
//! assert_eq!(*COUNTER.lock(), 1);
//! # }
//!
//! # #[cfg(feature = "lock_api_05")] {
//! // `lock_api` 0.5 (feature `lock_api_05`): the same names in `v05`.
//! use kernel_locks::lock_api_adapter::v05;
//!
//! static COUNTER_05: v05::Mutex<TicketLock, ThisCpu, u64> = v05::Mutex::new(0);
//! *COUNTER_05.lock() += 1;
//! assert_eq!(*COUNTER_05.lock(), 1);
//! # }
//! ```
//!
//! The guards are `!Send`: a lock must be released by the CPU that took it, as [`KernelLock`]
//! requires. A kernel that could migrate a thread while it holds a guard must disable preemption
//! around it. Debug builds panic when a guard is dropped on another CPU than the one that took
//! it, after releasing the lock (so that the panic reports the bug rather than leaving the lock
//! held). The 0.4 adapter knows that CPU for a mutex and the write side of a rwlock (debug builds
//! record it in the lock); for shared guards there is no single owner to record, and the lock's
//! own debug checks catch a drop on a CPU that holds no shared hold (as [`BrLock`](crate::BrLock)
//! does). `lock_api` 0.5 keeps per-acquisition state in every guard: there the state is the CPU
//! that took the lock (`v05::Held`), every release (shared ones too) uses it, and the check
//! covers every guard.
//!
//! Only locks that implement [`ConstInit`](crate::raw::ConstInit) can be used, because `lock_api`
//! needs a `const INIT`. This module is not available under loom.

use core::marker::PhantomData;

use crate::raw::{CpuId, KernelLock, KernelRwLock};

#[cfg(feature = "lock_api")]
pub mod v04;
#[cfg(feature = "lock_api_05")]
pub mod v05;

#[cfg(feature = "lock_api")]
pub use v04::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// How the adapters find the CPU they run on; implemented by the embedding kernel.
pub trait CurrentCpu {
    /// The index of the calling CPU, as passed to [`KernelLock`] operations. The caller runs with
    /// preemption disabled (or cannot migrate) while it holds a lock.
    fn current() -> CpuId;
}

/// Which CPU holds the exclusive side (its id + 1, 0 when none): recorded in debug builds and,
/// in every build, for `lock_api` 0.4, whose guards carry no state, so that a guard dropped on
/// another CPU still releases the hold of the CPU that took it. Zero-sized otherwise.
struct Owner {
    #[cfg(any(debug_assertions, feature = "lock_api"))]
    cpu_plus_one: core::sync::atomic::AtomicUsize,
}

impl Owner {
    /// No holder.
    const fn none() -> Self {
        Self {
            #[cfg(any(debug_assertions, feature = "lock_api"))]
            cpu_plus_one: core::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Records `cpu` as the holder (right after it acquired the lock).
    #[inline(always)]
    fn set(&self, _cpu: CpuId) {
        // Relaxed: the field is written and read only by the holder; between holders the lock's
        // own acquire/release orders these accesses.
        #[cfg(any(debug_assertions, feature = "lock_api"))]
        self.cpu_plus_one
            .store(_cpu + 1, core::sync::atomic::Ordering::Relaxed);
    }

    /// Forgets the holder (right before release, so that the next holder's record is not lost).
    #[inline(always)]
    fn clear(&self) {
        #[cfg(any(debug_assertions, feature = "lock_api"))]
        self.cpu_plus_one
            .store(0, core::sync::atomic::Ordering::Relaxed);
    }

    /// The recorded holder; panics if there is none.
    #[cfg(feature = "lock_api")]
    #[inline(always)]
    #[track_caller]
    fn get(&self) -> CpuId {
        let owner = self
            .cpu_plus_one
            .load(core::sync::atomic::Ordering::Relaxed);
        match owner.checked_sub(1) {
            Some(cpu) => cpu,
            None => panic!("lock_api adapter: unlock of a lock that is not held"),
        }
    }
}

/// What both raw locks are made of, and their operations, written once for every `lock_api`
/// version: each operation runs on the CPU `C` names, and an acquisition returns that CPU, which
/// its release takes back (`lock_api` 0.5 keeps it in the guard; 0.4 finds it again).
struct Core<L, C> {
    inner: L,
    owner: Owner,
    _cpu: PhantomData<fn() -> C>,
}

impl<L, C> Core<L, C> {
    /// Wraps `inner`, which must be unlocked.
    const fn new(inner: L) -> Self {
        Self {
            inner,
            owner: Owner::none(),
            _cpu: PhantomData,
        }
    }
}

impl<L, C: CurrentCpu> Core<L, C> {
    /// The CPU that took the exclusive side, for a release: the recorded owner (a panic if there
    /// is none), in every build. For `lock_api` 0.4, whose guards carry no state: a guard that
    /// migrated (a kernel bug the `!Send` guards cannot rule out for a thread migrated while it
    /// holds one) still releases the hold of the CPU that took it, instead of an unlock naming
    /// the running CPU, which a queue lock refuses, leaving the lock held for good.
    #[cfg(feature = "lock_api")]
    #[inline(always)]
    #[track_caller]
    fn exclusive_holder(&self) -> CpuId {
        self.owner.get()
    }

    /// Debug builds: panics unless the running CPU is `locked_on`, the CPU whose hold was just
    /// released. The check comes after the release: the hold is released either way, as
    /// `lock_api` 0.5 requires of a raw unlock that unwinds, and a lock left held would hang
    /// every other CPU instead of reporting the bug. (Releasing `locked_on`'s hold from another
    /// CPU is what [`KernelLock::unlock`] allows: `locked_on` holds it; only the rule that a
    /// holder is not migrated was broken, which is what this reports.)
    #[inline(always)]
    #[track_caller]
    fn check_released_on(&self, _locked_on: CpuId) {
        #[cfg(debug_assertions)]
        {
            let running = C::current();
            if running != _locked_on {
                panic!(
                    "lock_api adapter: guard taken on CPU {_locked_on} released on CPU {running} \
                     (a lock must be released by the CPU that took it)"
                );
            }
        }
    }
}

impl<L: KernelLock, C: CurrentCpu> Core<L, C> {
    /// Takes `inner` exclusively on the running CPU, which it records (debug builds) and returns.
    #[inline]
    #[track_caller]
    fn lock(&self) -> CpuId {
        let cpu = C::current();
        self.inner.lock(cpu);
        self.owner.set(cpu);
        cpu
    }

    /// Tries to take `inner` exclusively on the running CPU; on success as [`Self::lock`].
    #[inline]
    #[track_caller]
    fn try_lock(&self) -> Option<CpuId> {
        let cpu = C::current();
        let locked = self.inner.try_lock(cpu);
        if locked {
            self.owner.set(cpu);
        }
        locked.then_some(cpu)
    }

    /// Releases the exclusive hold taken on `locked_on`; see [`Self::check_released_on`].
    ///
    /// # Safety
    /// `locked_on` holds `inner` exclusively, taken through [`Self::lock`] or [`Self::try_lock`]
    /// and not released since.
    #[inline]
    #[track_caller]
    unsafe fn unlock(&self, locked_on: CpuId) {
        self.owner.clear();
        // SAFETY: per this function's contract `locked_on` holds `inner`.
        unsafe { self.inner.unlock(locked_on) };
        self.check_released_on(locked_on);
    }

    /// Whether `inner` is held (or being acquired) in any way; a racy snapshot.
    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

impl<L: KernelRwLock, C: CurrentCpu> Core<L, C> {
    /// Takes `inner` shared on the running CPU, which it returns.
    #[inline]
    #[track_caller]
    fn read_lock(&self) -> CpuId {
        let cpu = C::current();
        self.inner.read_lock(cpu);
        cpu
    }

    /// Tries to take `inner` shared on the running CPU, which it returns on success.
    #[inline]
    #[track_caller]
    fn try_read_lock(&self) -> Option<CpuId> {
        let cpu = C::current();
        self.inner.try_read_lock(cpu).then_some(cpu)
    }

    /// Releases the shared hold taken on `locked_on`; see [`Self::check_released_on`].
    ///
    /// # Safety
    /// `locked_on` holds `inner` shared, taken through [`Self::read_lock`] or
    /// [`Self::try_read_lock`] and not released since.
    #[inline]
    #[track_caller]
    unsafe fn read_unlock(&self, locked_on: CpuId) {
        // SAFETY: per this function's contract `locked_on` holds `inner` shared.
        unsafe { self.inner.read_unlock(locked_on) };
        self.check_released_on(locked_on);
    }

    /// Whether `inner` is held (or being acquired) exclusively; a racy snapshot that only reads
    /// (`lock_api` 0.4's default would try a shared lock, which panics on a CPU that holds one).
    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.inner.is_write_locked()
    }
}

/// A raw lock type over a kernel lock `L` and a CPU finder `C`, with its constructor.
macro_rules! raw_lock {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<L, C> {
            core: Core<L, C>,
        }

        impl<L, C> $name<L, C> {
            /// Wraps `inner`, which must be unlocked.
            pub const fn from_lock(inner: L) -> Self {
                Self {
                    core: Core::new(inner),
                }
            }

            /// The wrapped kernel lock (for its name and state; do not lock it directly).
            pub fn inner(&self) -> &L {
                &self.core.inner
            }
        }
    };
}

raw_lock!(
    /// A raw mutex over the kernel lock `L`, finding the CPU with `C`: `lock_api` 0.4's and 0.5's
    /// `RawMutex` (features `lock_api` and `lock_api_05`).
    RawKernelMutex
);

raw_lock!(
    /// A raw reader-writer lock over the kernel lock `L`, finding the CPU with `C`: `lock_api`
    /// 0.4's and 0.5's `RawRwLock` (features `lock_api` and `lock_api_05`).
    RawKernelRwLock
);

/// The items of a raw lock trait impl that are alike in every `lock_api` version: `INIT` and
/// the state queries (`rwlock` adds `is_locked_exclusive`). Expanded inside the impls, where `L`
/// is the kernel lock type.
macro_rules! state_items {
    () => {
        #[allow(clippy::declare_interior_mutable_const)] // as in `lock_api`: only used to initialise
        const INIT: Self = Self::from_lock(L::INIT);

        #[inline]
        fn is_locked(&self) -> bool {
            self.core.is_locked()
        }
    };
    (rwlock) => {
        $crate::lock_api_adapter::state_items!();

        #[inline]
        fn is_locked_exclusive(&self) -> bool {
            self.core.is_locked_exclusive()
        }
    };
}
use state_items;

/// The data-carrying types over the raw locks, for the `lock_api` crate `$lock_api` (version
/// `$version`): written once for every version.
macro_rules! lock_types {
    ($lock_api:ident, $version:literal) => {
        #[doc = concat!(
                    "A mutex protecting a `T` with the kernel lock `L` (`lock_api` ",
                    $version,
                    "); `C` finds the current CPU."
                )]
        pub type Mutex<L, C, T> = $lock_api::Mutex<RawKernelMutex<L, C>, T>;

        /// The guard of a [`Mutex`].
        pub type MutexGuard<'a, L, C, T> = $lock_api::MutexGuard<'a, RawKernelMutex<L, C>, T>;

        #[doc = concat!(
                    "A reader-writer lock protecting a `T` with the kernel lock `L` (`lock_api` ",
                    $version,
                    "); `C` finds the current CPU."
                )]
        pub type RwLock<L, C, T> = $lock_api::RwLock<RawKernelRwLock<L, C>, T>;

        /// The shared guard of an [`RwLock`].
        pub type RwLockReadGuard<'a, L, C, T> =
            $lock_api::RwLockReadGuard<'a, RawKernelRwLock<L, C>, T>;

        /// The exclusive guard of an [`RwLock`].
        pub type RwLockWriteGuard<'a, L, C, T> =
            $lock_api::RwLockWriteGuard<'a, RawKernelRwLock<L, C>, T>;
    };
}
use lock_types;
