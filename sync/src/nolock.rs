//! [`NoLock`]: a lock that does nothing, the zero-cost baseline of the benchmarks.
//!
//! It provides **no mutual exclusion at all**: `lock` and `unlock` compile to nothing, `try_lock`
//! always succeeds and `is_locked` is always `false`. It exists so that a benchmark can measure a
//! workload without any locking cost, on workloads where each CPU only ever touches its own,
//! disjoint data (so that the missing exclusion does not matter). There are no memory orderings
//! to explain: there are no atomic accesses.
//!
//! Because an implementation of [`KernelLock`] promises mutual exclusion, and `NoLock` breaks that
//! promise, *constructing* one is `unsafe`: the creator takes over the promise for every critical
//! section run under it. For the same reason `NoLock` does not implement
//! [`ConstInit`](crate::raw::ConstInit), so the `lock_api` adapter cannot build one behind the
//! user's back.

use crate::raw::{CpuId, KernelLock, KernelRwLock};

/// A lock that does not lock; see the [module documentation](self).
///
/// Zero-sized. It accepts any CPU id and does not even check it, so that it costs nothing.
///
/// ```
/// use kernel_locks::{KernelLock, Mutex, NoLock};
///
/// // SAFETY: only CPU 0 ever touches this counter (a per-CPU benchmark baseline).
/// let per_cpu = Mutex::new(unsafe { NoLock::new() }, 0u64);
/// *per_cpu.lock(0) += 1;
/// assert_eq!(per_cpu.into_inner(), 1);
/// assert_eq!(core::mem::size_of::<NoLock>(), 0);
/// ```
#[derive(Debug)]
pub struct NoLock {
    /// Private, so that [`NoLock::new`] is the only way to build one.
    _private: (),
}

impl NoLock {
    /// A no-op lock.
    ///
    /// # Safety
    /// The caller guarantees that the critical sections run under this lock never conflict: no
    /// two of them access the same data at the same time where at least one access writes, and no
    /// CPU relies on the lock to see another CPU's writes. In practice: use it only in benchmarks
    /// where each CPU works on its own, disjoint data. Otherwise code that relies on a
    /// [`KernelLock`] or [`KernelRwLock`] for exclusion has data races (undefined behaviour).
    pub const unsafe fn new() -> NoLock {
        NoLock { _private: () }
    }
}

/// No per-CPU state, no bound.
impl crate::raw::MaxCpus for NoLock {
    const MAX_CPUS: usize = usize::MAX;
}

// SAFETY: `NoLock` does not exclude anything; the mutual-exclusion and ordering obligations of this
// trait are taken over by whoever called the `unsafe` constructor `NoLock::new` (see its contract:
// critical sections under a `NoLock` never conflict, so they need neither exclusion nor ordering).
// `is_locked` does not even read memory.
unsafe impl KernelLock for NoLock {
    fn name(&self) -> &'static str {
        "none"
    }

    fn max_cpus(&self) -> usize {
        usize::MAX
    }

    #[inline(always)]
    fn lock(&self, _cpu: CpuId) {}

    #[inline(always)]
    fn try_lock(&self, _cpu: CpuId) -> bool {
        true
    }

    #[inline(always)]
    unsafe fn unlock(&self, _cpu: CpuId) {}

    #[inline(always)]
    fn is_locked(&self) -> bool {
        false
    }
}

// SAFETY: as for `KernelLock`: the constructor's caller guarantees that nothing needs excluding.
unsafe impl KernelRwLock for NoLock {
    #[inline(always)]
    fn read_lock(&self, _cpu: CpuId) {}

    #[inline(always)]
    fn try_read_lock(&self, _cpu: CpuId) -> bool {
        true
    }

    #[inline(always)]
    unsafe fn read_unlock(&self, _cpu: CpuId) {}
}
