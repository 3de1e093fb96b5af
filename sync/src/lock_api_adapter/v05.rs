//! The adapters for `lock_api` 0.5 (feature `lock_api_05`; needs Rust 1.95, `lock_api` 0.5's own
//! `rust-version`, newer than this crate's).
//!
//! The same raw locks and [`CurrentCpu`] as the 0.4 adapters. `lock_api` 0.5 keeps
//! per-acquisition state in every guard; here it is [`Held`], the CPU that took the lock, which
//! the release uses, shared holds included. The guards are `!Send`.
//!
//! ```
//! use kernel_locks::lock_api_adapter::v05::{Mutex, RwLock};
//! use kernel_locks::lock_api_adapter::CurrentCpu;
//! use kernel_locks::{BrLock, CpuId, TicketLock};
//!
//! struct ThisCpu;
//! impl CurrentCpu for ThisCpu {
//!     fn current() -> CpuId {
//!         1 // a real kernel reads its per-CPU register here
//!     }
//! }
//!
//! static COUNTER: Mutex<TicketLock, ThisCpu, u64> = Mutex::new(0);
//! static ROUTES: RwLock<BrLock<4>, ThisCpu, [u8; 4]> = RwLock::new([0; 4]);
//!
//! *COUNTER.lock() += 1;
//! ROUTES.write()[1] = 7;
//! assert_eq!((*COUNTER.lock(), ROUTES.read()[1]), (1, 7));
//! assert!(!ROUTES.is_locked_exclusive());
//! ```

use super::{CurrentCpu, RawKernelMutex, RawKernelRwLock};
use crate::raw::{ConstInit, CpuId, KernelLock, KernelRwLock};

/// The exclusive side of `lock_api` 0.5's `RawMutex` and `RawRwLock`, whose methods are named
/// `$lock`, `$try_lock` and `$unlock` there: the running CPU takes the lock, its guard state
/// ([`Held`]) names that CPU, and the release passes it back.
macro_rules! exclusive_items {
    ($lock:ident, $try_lock:ident, $unlock:ident) => {
        #[inline]
        fn $lock(&self) -> Held {
            Held::on(self.core.lock())
        }

        #[inline]
        fn $try_lock(&self) -> Option<Held> {
            self.core.try_lock().map(Held::on)
        }

        #[inline]
        #[track_caller]
        unsafe fn $unlock(&self, guard: Held) {
            // SAFETY: the caller passes the state of an exclusive acquisition of this lock:
            // `guard.cpu` took it and has not released it.
            unsafe { self.core.unlock(guard.cpu) };
        }
    };
}

/// The state a `lock_api` 0.5 guard keeps for its acquisition: the CPU that took the lock.
///
/// `!Send` (a lock is released by the CPU that took it) and `Sync`, as
/// [`lock_api_05::GuardNoSend`].
pub struct Held {
    cpu: CpuId,
    _not_send: lock_api_05::GuardNoSend,
}

impl Held {
    /// The state of an acquisition by `cpu`.
    #[inline(always)]
    fn on(cpu: CpuId) -> Self {
        Self {
            cpu,
            _not_send: lock_api_05::GuardNoSend::new(),
        }
    }

    /// The CPU that took the lock.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }
}

// SAFETY: exclusion and orderings are those of the `KernelLock` `inner`. Every acquisition's
// guard state names the CPU that took it, and its release passes that CPU back (guards are
// `!Send`, so it is also the running CPU; debug builds check). A lock operation that panics
// (CPU id out of range, a detected misuse) does so before it acquires; a release that panics
// (the debug check) has released first. The kernel locks hold no pointers into themselves, so a
// locked mutex can be moved or dropped (its state forgotten) safely.
unsafe impl<L: KernelLock + ConstInit, C: CurrentCpu> lock_api_05::RawMutex
    for RawKernelMutex<L, C>
{
    super::state_items!();

    type Guard = Held;

    exclusive_items!(lock, try_lock, unlock);
}

// SAFETY: exclusion and orderings are those of the `KernelRwLock` `inner` (its `KernelLock`
// operations are the exclusive side); acquisitions and releases as for `RawKernelMutex`, shared
// ones included.
unsafe impl<L: KernelRwLock + ConstInit, C: CurrentCpu> lock_api_05::RawRwLock
    for RawKernelRwLock<L, C>
{
    super::state_items!(rwlock);

    type SharedGuard = Held;
    type ExclusiveGuard = Held;

    #[inline]
    fn lock_shared(&self) -> Held {
        Held::on(self.core.read_lock())
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<Held> {
        self.core.try_read_lock().map(Held::on)
    }

    #[inline]
    #[track_caller]
    unsafe fn unlock_shared(&self, guard: Held) {
        // SAFETY: the caller passes the state of a shared acquisition of this lock: `guard.cpu`
        // took it and has not released it.
        unsafe { self.core.read_unlock(guard.cpu) };
    }

    exclusive_items!(lock_exclusive, try_lock_exclusive, unlock_exclusive);
}

super::lock_types!(lock_api_05, "0.5");
