//! The lock traits every implementation in this crate provides.
//!
//! [`KernelLock`] is a raw lock in the sense of `lock_api::RawMutex`: it protects no data itself
//! and is released explicitly. It differs in two ways that a kernel needs:
//!
//! * every operation names the CPU performing it, because queue locks own a node per CPU and the
//!   big-reader lock a slot per CPU;
//! * [`KernelLock::is_locked`] is a pure read of the lock state, so that a transaction can put the
//!   lock in its read set (lock elision, see `RtmLock`).
//!
//! [`CpuBound`] is the marker that keeps every guard of the crate on the CPU that took it.

use core::marker::PhantomData;

/// Index of a CPU (core or hardware thread), `0..max_cpus`.
pub type CpuId = usize;

/// The marker of a value that belongs to the CPU that made it: a field of this type makes its
/// holder `!Send` (and `!Sync`), so the value cannot move to another thread.
///
/// Every guard of this crate holds one: a lock guard ([`MutexGuard`](crate::MutexGuard),
/// [`RwLockReadGuard`](crate::RwLockReadGuard), [`RwLockWriteGuard`](crate::RwLockWriteGuard))
/// releases its lock as the CPU that took it, which a queue lock's release needs (it hands over
/// that CPU's node), and an interrupt guard or token ([`IrqGuard`](crate::IrqGuard),
/// [`IrqSaved`](crate::irq::IrqSaved)) restores the interrupt mask of the CPU that saved it.
/// Guards that may be shared (a data guard when `T: Sync`) implement `Sync` themselves.
///
/// Moving such a guard to another thread is a compile error that names this type, "`*const
/// CpuBound` cannot be sent between threads safely", with the guard's type in the notes below
/// it. The fix is to release the lock (drop the guard) on the CPU that took it; a kernel keeps
/// the holder from migrating between the two (preemption off), as for the raw lock (see
/// [`KernelLock`]'s rules for callers).
///
/// ```compile_fail,E0277
/// use kernel_locks::{ClhLock, Mutex};
///
/// static DATA: Mutex<ClhLock<2>, u32> = Mutex::new(ClhLock::new(), 0);
/// let guard = DATA.lock(0);
/// std::thread::spawn(move || drop(guard)); // error: `*const CpuBound` cannot be sent ...
/// ```
///
/// Zero-sized; a kernel can put it in guard types of its own.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBound(PhantomData<*const CpuBound>);

impl CpuBound {
    /// The marker (zero-sized).
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

/// A mutual-exclusion lock for kernel code running on several CPUs.
///
/// # Safety
/// For implementors:
/// * Mutual exclusion: between a successful [`lock`](Self::lock) or [`try_lock`](Self::try_lock)
///   and the matching [`unlock`](Self::unlock), no other acquisition may succeed.
/// * Acquiring has at least `Acquire` and releasing at least `Release` semantics, so everything the
///   previous holder wrote in its critical section is visible to the next holder.
/// * [`is_locked`](Self::is_locked) only reads memory.
///
/// # Rules for callers
/// * A CPU passes its own index, in `0..max_cpus()`; out of range panics (in every build).
///   Every operation is `#[track_caller]`: a panic names the caller's line, not this crate's.
/// * The CPU that locked is the CPU that unlocks: do not migrate a holder between CPUs (kernel code
///   runs lock holders with preemption disabled; the `lock_api` adapter's guards are `!Send`).
/// * A CPU does not lock a lock it already holds (none of these locks is reentrant; it deadlocks).
pub unsafe trait KernelLock: Sync {
    /// A short name for reports and boot logs, such as `"clh"`.
    fn name(&self) -> &'static str;

    /// How many CPUs this instance supports: valid [`CpuId`]s are `0..max_cpus()`.
    fn max_cpus(&self) -> usize;

    /// Acquires the lock for `cpu`, waiting as long as needed.
    #[track_caller]
    fn lock(&self, cpu: CpuId);

    /// [`lock`](Self::lock) for a caller that has checked `cpu < self.max_cpus()` itself (a
    /// kernel checks its core index once per entry; the lock's own range check would be a
    /// second compare and branch on every acquisition): a lock may skip its range check here
    /// (debug builds keep it). The default is [`lock`](Self::lock).
    ///
    /// # Safety
    /// `cpu < self.max_cpus()`.
    #[inline(always)]
    #[track_caller]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        self.lock(cpu)
    }

    /// Acquires the lock for `cpu` if that is possible without waiting; returns whether it did.
    #[track_caller]
    fn try_lock(&self, cpu: CpuId) -> bool;

    /// Releases the lock held by `cpu`.
    ///
    /// # Safety
    /// `cpu` must hold the lock, acquired by `lock` or a successful `try_lock` on this same `cpu`
    /// and not released since. Every build detects the violations that cost nothing on the fast
    /// path (each lock documents which) and panics; debug builds detect more.
    #[track_caller]
    unsafe fn unlock(&self, cpu: CpuId);

    /// Whether some CPU holds (or is in the middle of acquiring) the lock.
    ///
    /// A racy snapshot, meant for heuristics and for lock elision, where it is read inside a
    /// transaction so that any later acquisition by another CPU aborts the transaction.
    fn is_locked(&self) -> bool;
}

/// A reader-writer extension: [`KernelLock`]'s operations are the exclusive (write) side.
///
/// # Safety
/// For implementors:
/// Between a successful shared acquisition and its release, no exclusive acquisition succeeds, and
/// the reverse; shared acquisitions may overlap each other. Orderings as for [`KernelLock`].
pub unsafe trait KernelRwLock: KernelLock {
    /// Acquires the lock shared for `cpu`, waiting as long as needed.
    #[track_caller]
    fn read_lock(&self, cpu: CpuId);

    /// Acquires the lock shared for `cpu` if possible without waiting; returns whether it did.
    #[track_caller]
    fn try_read_lock(&self, cpu: CpuId) -> bool;

    /// Releases a shared hold of `cpu`.
    ///
    /// # Safety
    /// `cpu` must hold the lock shared (and not have released that hold).
    #[track_caller]
    unsafe fn read_unlock(&self, cpu: CpuId);

    /// Whether some CPU holds (or is in the middle of acquiring) the lock exclusively.
    ///
    /// A racy snapshot, as [`is_locked`](KernelLock::is_locked); it only reads memory. The
    /// default is [`is_locked`](KernelLock::is_locked), which also counts shared holds: a lock
    /// that can tell the two apart overrides it (as [`BrLock`](crate::BrLock) does). The
    /// `lock_api` adapters answer `RwLock::is_locked_exclusive` with it.
    fn is_write_locked(&self) -> bool {
        self.is_locked()
    }
}

/// The compile-time bound on the CPU ids of a lock type: every instance's
/// [`max_cpus`](KernelLock::max_cpus) is at most `MAX_CPUS`.
///
/// Locks with per-CPU state sized by a parameter have that parameter (`ClhLock<N>`,
/// `McsLock<N>`, `BrLock<N>`, `RtmLock<_, N>`: `N`; `QSpinLock<P>`: its node pool's
/// `P::CPUS`); locks without per-CPU state
/// (`TicketLock`, `NoLock`) have no bound, `usize::MAX`, whatever count an instance was built
/// with at run time.
///
/// [`RtmLock<L, N>`](crate::RtmLock) names the CPU count again, for its own per-CPU slots; its
/// constructors need `L: MaxCpus` and fail to compile when `L` has a bound other than `N`
/// (`RtmLock<ClhLock<2>, 4>` would give CPUs 2 and 3 slots but no CLH node). A lock of one's
/// own implements it in one line: `const MAX_CPUS: usize = usize::MAX;` for a lock without
/// per-CPU state, its array length otherwise.
pub trait MaxCpus {
    /// The bound on [`max_cpus`](KernelLock::max_cpus): `usize::MAX` for none.
    const MAX_CPUS: usize;
}

/// Locks that can be built in a constant (needed by `lock_api`'s `const INIT`).
/// Not available under loom, whose atomics have no `const` constructor.
#[cfg(not(kernel_locks_loom))]
pub trait ConstInit {
    /// An unlocked lock.
    const INIT: Self;
}

/// Panics with a clear message when `cpu` is not a valid index for a lock of `max` CPUs.
#[inline(always)]
#[track_caller]
pub(crate) fn check_cpu(lock: &'static str, cpu: CpuId, max: usize) {
    if cpu >= max {
        cpu_out_of_range(lock, cpu, max);
    }
}

/// The panic of [`check_cpu`], out of line so that the check stays one compare and branch.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn cpu_out_of_range(lock: &'static str, cpu: CpuId, max: usize) -> ! {
    panic!("{lock}: CPU id {cpu} out of range (this lock supports CPUs 0..{max})");
}

/// The panic of a CPU that locks a lock it already holds, which every lock of this crate raises
/// in debug builds instead of deadlocking (none of them is reentrant). Out of line and cold, so
/// that the check that leads here stays one compare and branch.
#[cold]
#[inline(never)]
#[track_caller]
#[allow(dead_code)] // Not every build configuration has a lock that detects re-locking.
pub(crate) fn relocked(lock: &'static str, cpu: CpuId) -> ! {
    panic!("{lock}: CPU {cpu} locks a lock it already holds (re-locking deadlocks: the lock is not reentrant)");
}

/// The panic of an unlock by a CPU that does not hold the lock: `holder` is the CPU that does,
/// where the lock knows it (`None`: the lock is free, or its holder is unknown).
#[cold]
#[inline(never)]
#[track_caller]
#[allow(dead_code)] // Not every build configuration has a lock that detects it.
pub(crate) fn not_holder(lock: &'static str, cpu: CpuId, holder: Option<CpuId>) -> ! {
    match holder {
        Some(holder) => panic!("{lock}: unlock by CPU {cpu}, but CPU {holder} holds the lock"),
        None => panic!("{lock}: unlock by CPU {cpu}, which does not hold the lock"),
    }
}
