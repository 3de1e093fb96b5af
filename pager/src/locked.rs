//! The pagers' shared state under the kernel's locks.
//!
//! Pagers on several cores share state: each pager's allocator (another pager takes from it when
//! it lends memory) and the donor ledger. That state sits behind a [`KernelLock`] of the
//! algorithm the kernel itself runs (`kernel-locks`, chosen by the kernel's `lock=`), so that a
//! measurement of the memory system compares the kernel's locks and not another one; every type
//! here takes that lock as a type parameter, and the pager programs (`servers::memory`) and the
//! hosted memory benchmark (`tests`) instantiate it, per-core pagers and the global pager alike.
//!
//! - [`PagerLock`]: builds an unlocked lock at run time (the shared state lives in memory mapped
//!   or allocated at run time, so a constant initialiser is not enough), for every lock of
//!   `kernel-locks`;
//! - [`LockedPager`] and [`LockedLedger`]: a pager and the ledger behind such a lock;
//! - [`lock_two`]: two pagers' locks taken in index order, the order every transfer between two
//!   pagers ([`donate`](crate::balance::donate), [`return_loans`](crate::balance::return_loans))
//!   uses, so that two transfers never wait for each other in a cycle.

use kernel_locks::cna::{CnaNodePool, NumaMap};
use kernel_locks::pad::Alignment;
use kernel_locks::qspin::QNodePool;
use kernel_locks::{
    BrLock, ClhLock, CnaLock, CpuId, KernelLock, MaxCpus, McsLock, Mutex, MutexGuard, NoLock,
    QSpinLock, Relax, Rtm, RtmLock, TicketLock,
};

use crate::balance::Ledger;
use crate::pager::Pager;

/// A lock the pagers' shared state can be built with at run time.
pub trait PagerLock: KernelLock + Send + Sized + 'static {
    /// An unlocked lock.
    ///
    /// # Safety
    /// A lock that provides no mutual exclusion ([`NoLock`]) hands that duty to the caller: no
    /// two critical sections run under the lock may overlap (one CPU uses the state guarded by
    /// it, or the callers order their sections otherwise). For every other lock this is safe.
    unsafe fn make() -> Self;
}

impl<const N: usize, R: Relax + 'static, A: Alignment> PagerLock for ClhLock<N, R, A> {
    unsafe fn make() -> Self {
        ClhLock::new()
    }
}

impl<const N: usize, R: Relax + 'static> PagerLock for McsLock<N, R> {
    unsafe fn make() -> Self {
        McsLock::new()
    }
}

/// Every lock over the pool `P` shares its per-CPU nodes: a CPU id names one thread at a time
/// across all of them (the pagers' ids are their indices).
impl<P: QNodePool, R: Relax + 'static> PagerLock for QSpinLock<P, R> {
    unsafe fn make() -> Self {
        QSpinLock::new()
    }
}

/// As for the queued spinlock: the locks over `P` share its per-CPU nodes. The map `M` is a
/// hint (the pagers' ids are their indices, whatever nodes it puts them on).
impl<P: CnaNodePool, M: NumaMap, R: Relax + 'static, const LOCAL_LIMIT: u32> PagerLock
    for CnaLock<P, M, R, LOCAL_LIMIT>
{
    unsafe fn make() -> Self {
        CnaLock::new()
    }
}

impl<R: Relax + 'static, const BACKOFF: usize> PagerLock for TicketLock<R, BACKOFF> {
    unsafe fn make() -> Self {
        TicketLock::with_relax()
    }
}

impl<const N: usize, R: Relax + 'static, A: Alignment> PagerLock for BrLock<N, R, A> {
    unsafe fn make() -> Self {
        BrLock::new()
    }
}

impl<L: PagerLock + MaxCpus, const N: usize, R: Relax + 'static> PagerLock
    for RtmLock<L, N, R, Rtm>
{
    unsafe fn make() -> Self {
        // SAFETY: the caller's contract is the fallback's: elision runs every critical section
        // either as a transaction or under the fallback.
        RtmLock::new(unsafe { L::make() })
    }
}

impl PagerLock for NoLock {
    unsafe fn make() -> Self {
        // SAFETY: the caller keeps the critical sections apart (this function's contract).
        unsafe { NoLock::new() }
    }
}

/// A pager behind a lock of kind `L`.
pub type LockedPager<L, const N: usize, const MAX_ORDER: usize> = Mutex<L, Pager<N, MAX_ORDER>>;

/// The donor ledger (at most `LOANS` loans) behind a lock of kind `L`.
pub type LockedLedger<L, const LOANS: usize> = Mutex<L, Ledger<LOANS>>;

/// Locks `locks[a]` and `locks[b]` for `cpu`, the lower index first, and returns their guards
/// in the order asked for: `(a's, b's)`.
///
/// # Panics
/// If `a == b` (a pager does not trade with itself) or either is out of range.
pub fn lock_two<L: KernelLock, T>(
    locks: &[Mutex<L, T>],
    a: usize,
    b: usize,
    cpu: CpuId,
) -> (MutexGuard<'_, L, T>, MutexGuard<'_, L, T>) {
    assert_ne!(a, b, "a pager does not trade with itself");
    let first = locks[a.min(b)].lock(cpu);
    let second = locks[a.max(b)].lock(cpu);
    if a < b {
        (first, second)
    } else {
        (second, first)
    }
}
