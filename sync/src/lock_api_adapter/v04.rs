//! The adapters for `lock_api` 0.4 (feature `lock_api`); its types are also at the root of
//! [`lock_api_adapter`](super).
//!
//! `lock_api` 0.4's guards carry no state: a release finds the CPU that took the lock again (the
//! recorded owner in debug builds, the running CPU otherwise). The guards are `!Send`
//! ([`lock_api::GuardNoSend`]).

use super::{CurrentCpu, RawKernelMutex, RawKernelRwLock};
use crate::raw::{ConstInit, KernelLock, KernelRwLock};

/// The exclusive side of `lock_api` 0.4's `RawMutex` and `RawRwLock`, whose methods are named
/// `$lock`, `$try_lock` and `$unlock` there: the running CPU takes the lock, and the release
/// finds the CPU that took it.
macro_rules! exclusive_items {
    ($lock:ident, $try_lock:ident, $unlock:ident) => {
        #[inline]
        fn $lock(&self) {
            self.core.lock();
        }

        #[inline]
        fn $try_lock(&self) -> bool {
            self.core.try_lock().is_some()
        }

        #[inline]
        #[track_caller]
        unsafe fn $unlock(&self) {
            let cpu = self.core.exclusive_holder();
            // SAFETY: the caller (a guard) holds the lock exclusively, taken on `cpu` (guards
            // are `!Send`).
            unsafe { self.core.unlock(cpu) };
        }
    };
}

// SAFETY: exclusion and orderings are those of the `KernelLock` `inner`, which is locked and
// unlocked by the same CPU because `C::current()` names the running CPU and guards are `!Send`.
unsafe impl<L: KernelLock + ConstInit, C: CurrentCpu> lock_api::RawMutex for RawKernelMutex<L, C> {
    super::state_items!();

    type GuardMarker = lock_api::GuardNoSend;

    exclusive_items!(lock, try_lock, unlock);
}

// SAFETY: exclusion and orderings are those of the `KernelRwLock` `inner` (its `KernelLock`
// operations are the exclusive side), used by the running CPU only, as for `RawKernelMutex`.
unsafe impl<L: KernelRwLock + ConstInit, C: CurrentCpu> lock_api::RawRwLock
    for RawKernelRwLock<L, C>
{
    super::state_items!(rwlock);

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        self.core.read_lock();
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.core.try_read_lock().is_some()
    }

    #[inline]
    #[track_caller]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller (a read guard) holds the lock shared, taken on this CPU (guards are
        // `!Send`).
        unsafe { self.core.read_unlock(C::current()) };
    }

    exclusive_items!(lock_exclusive, try_lock_exclusive, unlock_exclusive);
}

super::lock_types!(lock_api, "0.4");
