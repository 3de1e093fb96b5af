//! Transaction engines: the [`TxEngine`] trait, the abort status it reports, and [`Rtm`], the real
//! Intel RTM engine with run-time detection.

use core::fmt;
use core::sync::atomic::AtomicU8;

use crate::pad::CachePadded;

/// The status of an aborted transaction: the bits `XBEGIN` leaves in `EAX` when it resumes at its
/// fallback address (Intel SDM vol. 1, "RTM abort status definition").
///
/// | bit | meaning |
/// |-----|---------|
/// | 0 | explicit abort by `XABORT`; the code is in bits 31:24 |
/// | 1 | the transaction may succeed on a retry |
/// | 2 | conflict: another CPU accessed a line in this transaction's read or write set |
/// | 3 | capacity: the read or write set overflowed |
/// | 4 | a debug breakpoint hit |
/// | 5 | the abort happened in a nested transaction |
///
/// A status of 0 means none of these: typically an interrupt, an exception or an instruction that
/// always aborts (`CPUID`, I/O, `MOV CR3`, ...).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AbortStatus(u32);

impl AbortStatus {
    /// Bit 0: the transaction executed `XABORT`.
    pub const EXPLICIT: u32 = 1 << 0;
    /// Bit 1: the transaction may succeed if retried.
    pub const RETRY: u32 = 1 << 1;
    /// Bit 2: a memory conflict with another CPU.
    pub const CONFLICT: u32 = 1 << 2;
    /// Bit 3: an internal buffer (read or write set) overflowed.
    pub const CAPACITY: u32 = 1 << 3;
    /// Bit 4: a debug breakpoint was hit.
    pub const DEBUG: u32 = 1 << 4;
    /// Bit 5: the abort happened during a nested transaction.
    pub const NESTED: u32 = 1 << 5;
    /// The `XABORT` code that means "the fallback lock is held" (as in glibc).
    pub const BUSY_CODE: u8 = 0xff;
    /// The status of `XABORT 0xff`: explicit, code 0xff.
    pub const BUSY: Self = Self::explicit_code(Self::BUSY_CODE);

    /// Wraps raw `EAX` bits.
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// The status of an `XABORT code`: the explicit bit and the code in bits 31:24.
    pub const fn explicit_code(code: u8) -> Self {
        Self(Self::EXPLICIT | (code as u32) << 24)
    }

    /// The raw `EAX` bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Bit 0: aborted by `XABORT`.
    pub const fn explicit(self) -> bool {
        self.0 & Self::EXPLICIT != 0
    }

    /// Bit 1: the hardware thinks a retry may succeed.
    pub const fn retry(self) -> bool {
        self.0 & Self::RETRY != 0
    }

    /// Bit 2: a data conflict with another CPU.
    pub const fn conflict(self) -> bool {
        self.0 & Self::CONFLICT != 0
    }

    /// Bit 3: the read or write set overflowed.
    pub const fn capacity(self) -> bool {
        self.0 & Self::CAPACITY != 0
    }

    /// Bit 4: a debug breakpoint.
    pub const fn debug(self) -> bool {
        self.0 & Self::DEBUG != 0
    }

    /// Bit 5: aborted inside a nested transaction.
    pub const fn nested(self) -> bool {
        self.0 & Self::NESTED != 0
    }

    /// Bits 31:24: the `XABORT` code (meaningful when [`explicit`](Self::explicit) is set).
    pub const fn code(self) -> u8 {
        (self.0 >> 24) as u8
    }

    /// An explicit abort with code 0xff: the elided lock was found held inside the transaction.
    pub const fn is_busy(self) -> bool {
        self.explicit() && self.code() == Self::BUSY_CODE
    }

    /// The single cause this status is counted under (see [`AbortCause`] for the precedence).
    pub const fn cause(self) -> AbortCause {
        if self.is_busy() {
            AbortCause::Busy
        } else if self.capacity() {
            AbortCause::Capacity
        } else if self.conflict() {
            AbortCause::Conflict
        } else if self.debug() || self.nested() {
            AbortCause::DebugNested
        } else if self.retry() {
            AbortCause::Retry
        } else {
            AbortCause::Other
        }
    }
}

impl fmt::Debug for AbortStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AbortStatus({:#010x}: {self})", self.0)
    }
}

impl fmt::Display for AbortStatus {
    /// The set flags, such as `conflict|retry` or `explicit(0xff)|...`; `none` for 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = [
            (self.retry(), "retry"),
            (self.conflict(), "conflict"),
            (self.capacity(), "capacity"),
            (self.debug(), "debug"),
            (self.nested(), "nested"),
        ];
        let mut first = true;
        if self.explicit() {
            write!(f, "explicit({:#04x})", self.code())?;
            first = false;
        }
        for (set, name) in flags {
            if set {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// The one cause an abort is counted under in [`RtmStats`](super::RtmStats).
///
/// The hardware can set several bits at once (a conflict usually comes with the retry bit); the
/// first matching row of this precedence wins: [`Busy`](Self::Busy), [`Capacity`](Self::Capacity),
/// [`Conflict`](Self::Conflict), [`DebugNested`](Self::DebugNested), [`Retry`](Self::Retry),
/// [`Other`](Self::Other).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AbortCause {
    /// `XABORT 0xff`: the fallback lock was held when the transaction read it.
    Busy,
    /// The read or write set overflowed: retrying the same section will overflow again.
    Capacity,
    /// A data conflict with another CPU (possibly with the fallback lock word being taken).
    Conflict,
    /// A debug breakpoint or an abort inside a nested transaction.
    DebugNested,
    /// Only the retry bit: a transient abort.
    Retry,
    /// Nothing the hardware could name (interrupt, exception, an always-aborting instruction) or an
    /// explicit abort with another code than 0xff.
    Other,
}

/// A hardware (or simulated) transactional-memory engine, as lock elision needs it.
///
/// The lock calls, on one CPU: [`begin`](Self::begin); inside the transaction it reads the fallback
/// lock and calls [`abort_busy`](Self::abort_busy) if it is held; later [`commit`](Self::commit)
/// from `unlock`.
///
/// # Safety
/// For implementors:
/// [`RtmLock`](super::RtmLock) relies on this for mutual exclusion. When `begin` returns `Ok(())`
/// the calling CPU is inside a transaction that, until the matching `commit`, either
/// * takes effect atomically with respect to every other CPU's memory accesses: in particular, if
///   any other CPU writes a location the transaction read (such as the fallback's lock word) or
///   accesses a location it wrote, the transaction aborts and none of its writes become visible,
///   and a committed transaction is ordered with the code around it at least like an `AcqRel`
///   read-modify-write; **or**
/// * provides an equivalent guarantee by other means (a simulation may serialise transactions
///   and make the fallback lock wait for them, see the `testing` module, behind
///   the `testing` feature).
///
/// An engine whose `begin` returns `Ok(())` without such isolation (a scripted fake) must make its
/// *construction* `unsafe`, and its users promise not to run elided sections concurrently.
///
/// When the engine reports an abort (`begin` returns `Err`), nothing the CPU did since the
/// previous `begin` returned `Ok` may remain visible, or the abort happened before any such work.
pub unsafe trait TxEngine: Sync {
    /// Whether transactions can run on this CPU at all. When false, the lock never calls
    /// [`begin`](Self::begin) and always takes the fallback lock. Should be cheap (cached).
    fn available(&self) -> bool;

    /// Starts a transaction: `Ok(())` means the CPU now runs transactionally. `Err(status)` means
    /// a transaction started by this call aborted (hardware: execution resumed here with every
    /// register and memory write of the transaction rolled back) or could not start.
    fn begin(&self) -> Result<(), AbortStatus>;

    /// Commits the current transaction (`XEND`). Outside a transaction it does nothing.
    ///
    /// # Safety
    /// Only the code that started the transaction (the lock's `unlock`) may end it: called while
    /// a critical section elided in this transaction still runs, the rest of that section would
    /// run outside the transaction, without mutual exclusion.
    unsafe fn commit(&self);

    /// Aborts the current transaction with [`AbortStatus::BUSY`] (`XABORT 0xff`).
    ///
    /// With real hardware inside a transaction this never returns: execution resumes in
    /// [`begin`](Self::begin), which returns `Err(AbortStatus::BUSY)`. A simulated engine cannot
    /// rewind and returns instead; the lock then treats the attempt as aborted with
    /// [`AbortStatus::BUSY`], exactly as if `begin` had returned it. Outside a transaction it does
    /// nothing.
    ///
    /// # Safety
    /// As for [`commit`](Self::commit): a simulated engine ends the transaction and returns, so
    /// only the code that started it may call this. (On real hardware an abort rolls everything
    /// back and is harmless anywhere.)
    unsafe fn abort_busy(&self);

    /// Whether the calling CPU is inside a transaction (`XTEST`).
    fn in_transaction(&self) -> bool;
}

/// Intel Restricted Transactional Memory (TSX-RTM), detected at run time.
///
/// [`available`](TxEngine::available) checks, once, `CPUID.(EAX=07H, ECX=0)`: `EBX` bit 11 (RTM)
/// set and `EDX` bit 11 (`RTM_ALWAYS_ABORT`, set by microcode that disables TSX) clear, after
/// checking that leaf 7 exists. The answer is cached in a static. On other architectures it is
/// false and the other methods report an abort or do nothing (they are never reached through
/// [`RtmLock`](super::RtmLock), which checks `available` first).
///
/// QEMU's TCG does not implement RTM (`XBEGIN` raises #UD in the guest) and does not advertise
/// it, so under QEMU the fallback path is the only path. Hypervisors and firmware may also hide
/// or disable TSX. Nothing here executes a TSX instruction unless CPUID advertised RTM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rtm;

/// Detection cache: `UNKNOWN` until the first query. Deliberately a `core` atomic even under loom:
/// it is a property of the machine, not of a modelled execution. Padded: it is read inside
/// transactions (`commit`, `abort_busy`), so no other data may share its cache line and abort them.
static RTM_SUPPORT: CachePadded<AtomicU8> = CachePadded::new(AtomicU8::new(UNKNOWN));
const UNKNOWN: u8 = 0;
const ABSENT: u8 = 1;
const PRESENT: u8 = 2;

impl Rtm {
    /// Queries CPUID now, without the cache: whether this CPU executes RTM transactions.
    pub fn detect() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::{__cpuid, __cpuid_count};
            // SAFETY: CPUID exists on every x86_64 CPU and only reads identification registers.
            // (`__cpuid` is an `unsafe fn` in older toolchains and safe in newer ones.)
            #[allow(unused_unsafe)]
            let max_leaf = unsafe { __cpuid(0) }.eax;
            if max_leaf < 7 {
                return false;
            }
            // SAFETY: as above; leaf 7 exists (checked against the maximum basic leaf).
            #[allow(unused_unsafe)]
            let leaf7 = unsafe { __cpuid_count(7, 0) };
            let rtm = leaf7.ebx & (1 << 11) != 0;
            let always_abort = leaf7.edx & (1 << 11) != 0;
            rtm && !always_abort
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Like [`TxEngine::available`], cached after the first call (every CPU of a machine is
    /// assumed to agree, as for any CPUID feature a kernel relies on).
    #[inline]
    pub fn supported() -> bool {
        use core::sync::atomic::Ordering::Relaxed;
        // Known at compile time elsewhere: the elision path folds away, and an ARMv7 kernel
        // pays only for the fallback lock and the bookkeeping around it.
        if cfg!(not(target_arch = "x86_64")) {
            return false;
        }
        // Relaxed: the cached value is a pure function of the hardware, so any CPU that computes
        // it computes the same value; there is nothing else to synchronise with.
        match RTM_SUPPORT.load(Relaxed) {
            PRESENT => true,
            ABSENT => false,
            _ => {
                let present = Self::detect();
                RTM_SUPPORT.store(if present { PRESENT } else { ABSENT }, Relaxed);
                present
            }
        }
    }
}

// SAFETY: RTM provides strong isolation: a transaction that reads a line another CPU writes, or
// writes a line another CPU accesses, aborts and discards all its writes; a committed RTM region
// has the ordering of a LOCK-prefixed instruction (Intel SDM vol. 1, 16.3.6), and the `asm!`
// blocks below are compiler barriers (no `nomem`), so no access moves out of the transaction.
// No TSX instruction runs unless CPUID advertised RTM.
unsafe impl TxEngine for Rtm {
    #[inline]
    fn available(&self) -> bool {
        Self::supported()
    }

    #[inline]
    fn begin(&self) -> Result<(), AbortStatus> {
        if !Self::supported() {
            return Err(AbortStatus::from_bits(0));
        }
        #[cfg(target_arch = "x86_64")]
        {
            let status: u32;
            // SAFETY: RTM is present (checked above), so XBEGIN cannot fault. On start it leaves
            // EAX = !0 and falls through to label 2. On abort the CPU rolls back every register
            // and memory write of the transaction and resumes at label 2 with the abort status in
            // EAX, so to the compiler this block simply returned a second time with another EAX
            // value (the code that ran in between left no trace). No `nomem`: the block is a
            // compiler memory barrier, so no access of the critical section is hoisted above it.
            unsafe {
                core::arch::asm!(
                    "mov eax, -1",
                    "xbegin 2f",
                    "2:",
                    out("eax") status,
                    options(nostack),
                );
            }
            if status == u32::MAX {
                Ok(())
            } else {
                Err(AbortStatus::from_bits(status))
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Err(AbortStatus::from_bits(0))
        }
    }

    #[inline]
    unsafe fn commit(&self) {
        #[cfg(target_arch = "x86_64")]
        if self.in_transaction() {
            // SAFETY: we are inside a transaction (XTEST above), so XEND does not raise #GP; it
            // commits (or, if the transaction is doomed, aborts to its XBEGIN). No `nomem`: the
            // critical section's accesses stay before it.
            unsafe { core::arch::asm!("xend", options(nostack)) };
        }
    }

    #[inline]
    unsafe fn abort_busy(&self) {
        #[cfg(target_arch = "x86_64")]
        if Self::supported() {
            // SAFETY: RTM is present, so XABORT does not fault. Inside a transaction it aborts
            // (execution resumes at XBEGIN with status explicit|0xff<<24); outside it is a no-op.
            unsafe { core::arch::asm!("xabort 0xff", options(nostack)) };
        }
    }

    #[inline]
    fn in_transaction(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if Self::supported() {
            let inside: u8;
            // SAFETY: RTM is present, so XTEST does not raise #UD. It only sets ZF (clear inside
            // a transaction); SETNZ copies that to a register. No memory access.
            unsafe {
                core::arch::asm!("xtest", "setnz {inside}", inside = out(reg_byte) inside,
                    options(nomem, nostack));
            }
            return inside != 0;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bits_and_causes() {
        let busy = AbortStatus::BUSY;
        assert!(busy.explicit() && busy.is_busy());
        assert_eq!(busy.code(), 0xff);
        assert_eq!(busy.bits(), 0xff00_0001);
        assert_eq!(busy.cause(), AbortCause::Busy);
        let conflict = AbortStatus::from_bits(AbortStatus::CONFLICT | AbortStatus::RETRY);
        assert!(conflict.conflict() && conflict.retry() && !conflict.explicit());
        assert_eq!(conflict.cause(), AbortCause::Conflict);
        assert_eq!(
            AbortStatus::from_bits(AbortStatus::CAPACITY).cause(),
            AbortCause::Capacity
        );
        assert_eq!(
            AbortStatus::from_bits(AbortStatus::RETRY).cause(),
            AbortCause::Retry
        );
        assert_eq!(
            AbortStatus::from_bits(AbortStatus::NESTED).cause(),
            AbortCause::DebugNested
        );
        assert_eq!(
            AbortStatus::from_bits(AbortStatus::DEBUG).cause(),
            AbortCause::DebugNested
        );
        assert_eq!(AbortStatus::from_bits(0).cause(), AbortCause::Other);
        assert_eq!(AbortStatus::explicit_code(7).cause(), AbortCause::Other);
        assert_eq!(std::format!("{conflict}"), "retry|conflict");
        assert_eq!(std::format!("{busy}"), "explicit(0xff)");
        assert_eq!(std::format!("{}", AbortStatus::default()), "none");
    }

    #[test]
    fn detection_is_cached_and_consistent() {
        assert_eq!(Rtm.available(), Rtm::detect());
        assert_eq!(Rtm.available(), Rtm::supported());
        if !Rtm.available() {
            assert!(!Rtm.in_transaction());
            assert_eq!(Rtm.begin(), Err(AbortStatus::from_bits(0)));
            // SAFETY: no transaction is open (RTM is absent): both are no-ops.
            unsafe {
                Rtm.commit();
                Rtm.abort_busy();
            }
        }
    }
}
