//! Interrupt-safe locking: the calling CPU's interrupts masked from before a lock is taken until
//! after it is released.
//!
//! # Why
//! None of this crate's locks is reentrant. Code that holds a lock on CPU 0 and is interrupted
//! there by a handler that takes the same lock deadlocks: the handler spins for a lock that only
//! the code it interrupted can release, and that code does not run again until the handler
//! returns. Other CPUs cannot help. A lock that an interrupt handler takes is therefore taken
//! everywhere else with the CPU's interrupts masked, as Linux's `spin_lock_irqsave` does. (The
//! handler itself runs with interrupts masked already; it may use the same calls, which then
//! save "masked" and restore "masked".)
//!
//! # What is here
//! * [`Interrupts`]: the calling CPU's interrupt mask as a type: save the state and mask
//!   ([`save_and_disable`](Interrupts::save_and_disable)), put a saved state back
//!   ([`restore`](Interrupts::restore)). Implemented for x86_64 ([`X86Interrupts`], RFLAGS.IF),
//!   ARMv7-A ([`ArmIrq`], CPSR.I; [`ArmIrqFiq`], CPSR.I and CPSR.F), AArch64 ([`Aarch64Irq`],
//!   DAIF.I), and, for tests on a host, a double with a state per thread
//!   (`testing::TestInterrupts`, feature `testing`).
//!   [`Native`] names the one of the target being built. (Documentation built for one target
//!   shows the other targets' types too, without their implementation.)
//! * [`IrqGuard`]: interrupts masked while it lives, the saved state restored on drop;
//!   [`without_interrupts`] runs a closure inside one.
//! * For the raw locks, the extension trait [`KernelLockIrq`] over every
//!   [`KernelLock`]: [`lock_irqsave`](KernelLockIrq::lock_irqsave) returns an [`IrqSaved`]
//!   token that [`unlock_irqrestore`](KernelLockIrq::unlock_irqrestore) consumes (the lock is
//!   released first, then the state restored), and
//!   [`try_lock_irqsave`](KernelLockIrq::try_lock_irqsave).
//! * For the data wrappers, [`Mutex::lock_irqsave`] / [`Mutex::try_lock_irqsave`] and
//!   [`RwLock::read_irqsave`] / [`RwLock::write_irqsave`] (and their `try_` forms), which
//!   return an [`IrqGuarded`] guard: it derefs to the data, and on drop releases the lock, then
//!   restores the interrupt state. It is `!Send`, as the guard it wraps.
//!
//! # Ordering
//! Masking is a matter of the calling CPU alone: an interrupt is taken on the core whose mask
//! allows it, between two of its instructions, and the handler sees that core's own earlier
//! accesses in program order (a core always observes its own stores, store buffer or not). So
//! what matters is the order of instructions on that core, and that the compiler keeps it:
//!
//! * **Mask before the first access to the lock.** [`save_and_disable`](Interrupts::save_and_disable) runs before the
//!   acquisition's first load or read-modify-write; an interrupt either arrives before the mask
//!   (the lock is not held yet: the handler may take it and release it) or not until the
//!   restore.
//! * **Restore after the release store.** The lock's release (a `Release` store, with its own
//!   barrier for the other CPUs: plain `mov` on x86_64, `dmb ish` then `str` on ARMv7, `stlr` on
//!   AArch64) comes first in program order; an interrupt taken right after the restore finds the
//!   lock free on this core, whatever the other cores see yet.
//! * **The hardware.** x86_64: `cli` takes effect for the next instruction; `sti` one
//!   instruction later (its interrupt shadow), which is why the restore is `sti; nop`. ARMv7-A:
//!   `cpsid i` and a `msr cpsr_c` that writes the I and F bits are self-synchronising for the
//!   core that executes them (their effect on interrupt masking is visible to the very next
//!   instruction; no `isb`). AArch64: writes of DAIF by `msr` likewise take effect for the next
//!   instruction.
//! * **The compiler.** An `asm!` block without `options(nomem)` may read and write any memory,
//!   so the compiler neither moves memory accesses across it nor caches values in registers
//!   over it: it acts as a compiler barrier. The x86_64 crate's `cli`/`sti` and this module's
//!   ARMv7 blocks omit `nomem` for that. The `aarch64-cpu` crate's register accessors are
//!   `nomem`, so the AArch64 implementation adds a `compiler_fence(SeqCst)` after masking and
//!   before restoring (no instruction; it only forbids the compiler to move accesses across).
//!
//! # Nesting
//! Saved states nest: an inner save on a masked CPU saves "masked", and its restore leaves the
//! CPU masked; only the outermost restore unmasks. That is what a handler (entered masked)
//! relies on, and what makes two interrupt-safe locks taken one inside the other safe. States
//! are restored in the reverse order of their saves, on the CPU that saved them: guards do that
//! when they drop at the end of their scopes. Dropping an outer guard before an inner one (by
//! `drop`ping it early) unmasks the CPU while the inner lock is held: a logic error that brings
//! back the deadlock, which the test double detects (`testing::TestInterrupts` panics).
//! Guards and tokens are `!Send`: a state saved on one CPU is never restored on another.
//!
//! # Cost
//! Instructions that `lock_irqsave` + `unlock_irqrestore` add to `lock` + `unlock` on the
//! uncontended path of a ticket lock (release builds, the masking inlined into the caller):
//!
//! | target | save and mask | restore | lock + unlock | irqsave + irqrestore | added |
//! |--------|---------------|---------|---------------|----------------------|-------|
//! | x86_64 ([`X86Interrupts`]) | `pushfq; pop; cli` | `test; jne; sti; nop` | 12 | 23 (21 entered masked) | 11 (9) |
//! | ARMv7-A ([`ArmIrq`]) | `mrs; cpsid i` | `msr cpsr_c` | 21 | 24 | 3 |
//! | AArch64 ([`Aarch64Irq`]) | `mrs; orr; msr` | `msr` | - | - | 4 |
//!
//! On x86_64, 7 of the 11 are the masking itself; the other 4 keep the saved flags in a
//! callee-saved register over the lock's out-of-line slow paths (`push`/`pop` of `r14` and a
//! stack adjustment). On ARMv7 the saved CPSR takes a register of the same `push` list, so the
//! three instructions are the whole cost. How the figures were obtained: `sync/embed-check`'s
//! `irq_cost_plain` and `irq_cost_irqsave` (`#[inline(never)]`, a `TicketLock` taken and
//! released plainly and interrupt-safely) built with `cargo build --release --lib --target
//! x86_64-unknown-none` and `--target armv7a-none-eabi` (Rust 1.95), disassembled with the
//! toolchain's `llvm-objdump -d` (`rustup component add llvm-tools`), counting the
//! instructions from entry to return on the path without contention. The AArch64 row is read
//! from the implementation (not built into that check). Inside a caller's loop, where the
//! saved state stays in a register, the masking alone remains: measured in this project's
//! kernel under QEMU `-icount shift=0`, +8 on x86_64 (+5 entered masked) and +3 on ARMv7 over
//! the ticket, CLH and MCS locks (the workspace's `docs/locks.md` has the table). `pushfq` and `cli`/`sti` take tens of
//! cycles each on current x86 cores, `cpsid`/`msr cpsr_c` a few on a Cortex-A9: cheap beside a
//! contended lock's cache misses, not free beside an uncontended one.
//!
//! # Example
//! A tick counter that the timer interrupt handler and ordinary kernel code both update:
//!
//! ```
//! # #[cfg(feature = "testing")] fn main() {
//! use kernel_locks::irq::testing::TestInterrupts;
//! use kernel_locks::irq::Interrupts;
//! use kernel_locks::{Mutex, TicketLock};
//!
//! // In a kernel, `I` is `kernel_locks::irq::Native` (the target's CPU mask); this example
//! // runs on a host with the test double.
//! type I = TestInterrupts;
//! static TICKS: Mutex<TicketLock, u64> = Mutex::new(TicketLock::new(), 0);
//!
//! fn timer_interrupt(cpu: usize) {
//!     // Entered with interrupts masked: the save and restore keep them masked.
//!     *TICKS.lock_irqsave::<I>(cpu) += 1;
//! }
//!
//! fn read_ticks(cpu: usize) -> u64 {
//!     // Interrupts masked before the lock is taken, restored after it is released: the timer
//!     // interrupt cannot arrive on this CPU while it holds `TICKS`.
//!     let ticks = TICKS.lock_irqsave::<I>(cpu);
//!     assert!(!I::are_enabled());
//!     *ticks
//! }
//!
//! assert!(I::are_enabled());
//! // The double delivers the "interrupt" at once when unmasked, at the restore otherwise.
//! TestInterrupts::raise(|| timer_interrupt(0));
//! assert_eq!(read_ticks(0), 1);
//! assert!(I::are_enabled());
//! # }
//! # #[cfg(not(feature = "testing"))] fn main() {}
//! ```

use core::ops::{Deref, DerefMut};

use crate::mutex::{Mutex, MutexGuard};
use crate::raw::{CpuBound, CpuId, KernelLock, KernelRwLock};
use crate::rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The calling CPU's interrupt mask: saved and masked, then restored.
///
/// # Safety
/// For implementors:
/// * After [`save_and_disable`](Self::save_and_disable) returns, the calling CPU takes none of
///   the interrupts this type masks until a [`restore`](Self::restore) of a state that was saved
///   with them unmasked.
/// * [`restore`](Self::restore) puts back exactly the mask that the state was saved from
///   (masked stays masked).
/// * Both are compiler barriers: the compiler moves no memory access across them (an `asm!`
///   block without `nomem`, or a `compiler_fence`).
///
/// The locks' [`irqsave`](KernelLockIrq) operations rely on these for the absence of the
/// deadlock described in the [module documentation](self).
pub unsafe trait Interrupts {
    /// What [`save_and_disable`](Self::save_and_disable) saves: enough to put the mask back.
    type State: Copy;

    /// Saves the calling CPU's interrupt state and masks its interrupts.
    fn save_and_disable() -> Self::State;

    /// Restores a state saved by [`save_and_disable`](Self::save_and_disable).
    ///
    /// # Safety
    /// `state` was saved on the calling CPU, in the same processor mode, and every state saved
    /// after it has been restored already (states are restored in the reverse order of their
    /// saves). Restoring unmasks interrupts if they were unmasked at the save: the caller holds
    /// no lock that a handler takes by then.
    unsafe fn restore(state: Self::State);

    /// Whether the calling CPU takes the interrupts this type masks.
    fn are_enabled() -> bool;
}

/// x86_64: the interrupt flag, RFLAGS.IF, through the `x86_64` crate (`pushfq; pop` reads it,
/// `cli` clears it, `sti; nop` sets it). Ring 0 only: `cli` faults (#GP) in user mode.
/// The state is whether IF was set.
#[cfg(any(target_arch = "x86_64", doc))]
#[derive(Debug)]
pub struct X86Interrupts;

// SAFETY: `cli` masks every maskable interrupt from the next instruction on; the restore sets IF
// only if it was set at the save. The `x86_64` crate's `cli` and `sti` blocks omit `nomem`, so
// they are compiler barriers.
#[cfg(target_arch = "x86_64")]
unsafe impl Interrupts for X86Interrupts {
    type State = bool;

    #[inline(always)]
    fn save_and_disable() -> bool {
        let was = x86_64::instructions::interrupts::are_enabled();
        x86_64::instructions::interrupts::disable();
        was
    }

    #[inline(always)]
    unsafe fn restore(was: bool) {
        if was {
            // `sti; nop`: the `nop` ends `sti`'s one-instruction interrupt shadow inside this
            // call, so an interrupt pending since the save is taken here.
            x86_64::instructions::interrupts::enable();
        }
    }

    #[inline(always)]
    fn are_enabled() -> bool {
        x86_64::instructions::interrupts::are_enabled()
    }
}

/// CPSR.I and CPSR.F (bits 7 and 6).
#[cfg(target_arch = "arm")]
const CPSR_I: u32 = 1 << 7;
#[cfg(target_arch = "arm")]
const CPSR_F: u32 = 1 << 6;

/// Saves CPSR, then masks with `cpsid $flags`: one `asm!` block, so that nothing comes between.
///
/// Written by hand, not through the `aarch32-cpu` crate: its `interrupt` module masks and
/// unmasks IRQs only (no saved state to restore, nothing for FIQ), its blocks are `nomem` with
/// a separate `compiler_fence`, and it needs Rust 1.93, newer than this crate's 1.85.
#[cfg(target_arch = "arm")]
macro_rules! arm_save_and_mask {
    ($flags:literal) => {{
        let cpsr: u32;
        // SAFETY: reading CPSR and masking interrupts touch no memory and cannot break memory
        // safety. No `nomem`: the block is a compiler barrier (module docs, Ordering). In USR
        // mode `cpsid` does nothing (no kernel runs there).
        unsafe {
            core::arch::asm!(
                "mrs {cpsr}, cpsr",
                concat!("cpsid ", $flags),
                cpsr = out(reg) cpsr,
                options(nostack, preserves_flags)
            )
        };
        cpsr
    }};
}

/// Writes the control field of CPSR (mode, T, F, I) back from a saved CPSR.
///
/// `msr cpsr_c` writes the mode and T bits too; they equal the current ones under
/// [`Interrupts::restore`]'s contract (same CPU, same mode, same instruction set: this crate is
/// compiled for one), as in Linux's `arch_local_irq_restore`. One instruction, where
/// testing the bit and `cpsie` would be three.
///
/// # Safety
/// As [`Interrupts::restore`].
#[cfg(target_arch = "arm")]
#[inline(always)]
unsafe fn arm_restore(cpsr: u32) {
    // SAFETY: the caller's contract: `cpsr` was read on this CPU in this mode, so only the I
    // and F bits can differ from the current control field. No `nomem`: a compiler barrier.
    unsafe { core::arch::asm!("msr cpsr_c, {}", in(reg) cpsr, options(nostack, preserves_flags)) };
}

/// Reads CPSR.
#[cfg(target_arch = "arm")]
#[inline(always)]
fn arm_cpsr() -> u32 {
    let cpsr: u32;
    // SAFETY: reading CPSR has no side effects.
    unsafe {
        core::arch::asm!("mrs {}, cpsr", out(reg) cpsr, options(nomem, nostack, preserves_flags))
    };
    cpsr
}

/// ARMv7-A (and other A/R-profile AArch32 cores from ARMv6 on): IRQs, CPSR.I, saved with
/// `mrs`, masked with `cpsid i`, restored with `msr cpsr_c`. FIQs stay as they are (a kernel
/// that uses them for something that takes locks uses [`ArmIrqFiq`]). The state is the saved
/// CPSR. Privileged modes only.
#[cfg(any(target_arch = "arm", doc))]
#[derive(Debug)]
pub struct ArmIrq;

// SAFETY: `cpsid i` masks IRQs for the next instruction on (self-synchronising); the restore
// writes back the saved I bit (and the unchanged F bit). Both blocks omit `nomem`.
#[cfg(target_arch = "arm")]
unsafe impl Interrupts for ArmIrq {
    type State = u32;

    #[inline(always)]
    fn save_and_disable() -> u32 {
        arm_save_and_mask!("i")
    }

    #[inline(always)]
    unsafe fn restore(cpsr: u32) {
        // SAFETY: the caller's contract is `arm_restore`'s.
        unsafe { arm_restore(cpsr) }
    }

    #[inline(always)]
    fn are_enabled() -> bool {
        arm_cpsr() & CPSR_I == 0
    }
}

/// ARMv7-A: IRQs and FIQs, CPSR.I and CPSR.F, masked together with `cpsid if`, for locks that a
/// FIQ handler takes too. As [`ArmIrq`] otherwise; [`are_enabled`](Interrupts::are_enabled)
/// says whether either kind is unmasked.
#[cfg(any(target_arch = "arm", doc))]
#[derive(Debug)]
pub struct ArmIrqFiq;

// SAFETY: as for `ArmIrq`, with `cpsid if` masking both kinds and the restore writing back both
// saved bits.
#[cfg(target_arch = "arm")]
unsafe impl Interrupts for ArmIrqFiq {
    type State = u32;

    #[inline(always)]
    fn save_and_disable() -> u32 {
        arm_save_and_mask!("if")
    }

    #[inline(always)]
    unsafe fn restore(cpsr: u32) {
        // SAFETY: the caller's contract is `arm_restore`'s.
        unsafe { arm_restore(cpsr) }
    }

    #[inline(always)]
    fn are_enabled() -> bool {
        arm_cpsr() & (CPSR_I | CPSR_F) != CPSR_I | CPSR_F
    }
}

/// AArch64: IRQs, DAIF.I, through the `aarch64-cpu` crate (`mrs` of DAIF, `orr`, `msr` to mask,
/// `msr` of the saved value to restore). Debug, SError and FIQ masks stay as they are. The
/// state is the saved DAIF. EL1 (or higher) only.
#[cfg(any(target_arch = "aarch64", doc))]
#[derive(Debug)]
pub struct Aarch64Irq;

/// DAIF.I (bit 7).
#[cfg(target_arch = "aarch64")]
const DAIF_I: u64 = 1 << 7;

// SAFETY: the `msr` of DAIF with I set masks IRQs for the next instruction on; the restore
// writes back the saved DAIF. The crate's accessors are `nomem`, so compiler fences after the
// mask and before the restore keep memory accesses on their side.
#[cfg(target_arch = "aarch64")]
unsafe impl Interrupts for Aarch64Irq {
    type State = u64;

    #[inline(always)]
    fn save_and_disable() -> u64 {
        use aarch64_cpu::registers::{Readable, Writeable, DAIF};
        let daif = DAIF.get();
        DAIF.set(daif | DAIF_I);
        // SeqCst compiler fence: no instruction; no access after it moves above the mask.
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        daif
    }

    #[inline(always)]
    unsafe fn restore(daif: u64) {
        use aarch64_cpu::registers::{Writeable, DAIF};
        // SeqCst compiler fence: no instruction; no access before it (the lock's release
        // store) moves below the unmask.
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        DAIF.set(daif);
    }

    #[inline(always)]
    fn are_enabled() -> bool {
        use aarch64_cpu::registers::{Readable, DAIF};
        DAIF.get() & DAIF_I == 0
    }
}

/// The interrupt mask of the target being built: [`X86Interrupts`] on x86_64, [`ArmIrq`] on
/// 32-bit ARM, [`Aarch64Irq`] on AArch64.
#[cfg(target_arch = "x86_64")]
pub type Native = X86Interrupts;
/// The interrupt mask of the target being built: [`X86Interrupts`] on x86_64, [`ArmIrq`] on
/// 32-bit ARM, [`Aarch64Irq`] on AArch64.
#[cfg(target_arch = "arm")]
pub type Native = ArmIrq;
/// The interrupt mask of the target being built: [`X86Interrupts`] on x86_64, [`ArmIrq`] on
/// 32-bit ARM, [`Aarch64Irq`] on AArch64.
#[cfg(target_arch = "aarch64")]
pub type Native = Aarch64Irq;

/// Interrupts masked on the calling CPU while it lives; the saved state restored on drop.
///
/// `!Send` (and `!Sync`): the CPU that saved the state restores it. Guards nest; drop them in
/// the reverse order of their creation (scopes do), see the [module documentation](self).
#[must_use = "dropping the guard restores the interrupt state at once"]
pub struct IrqGuard<I: Interrupts> {
    saved: I::State,
    /// Makes the guard `!Send` and `!Sync`: it belongs to the CPU that saved the state.
    _cpu_bound: CpuBound,
}

impl<I: Interrupts> IrqGuard<I> {
    /// Saves the calling CPU's interrupt state and masks its interrupts.
    #[inline(always)]
    pub fn new() -> Self {
        Self {
            saved: I::save_and_disable(),
            _cpu_bound: CpuBound::new(),
        }
    }

    /// The state this guard restores.
    pub fn saved(&self) -> I::State {
        self.saved
    }
}

impl<I: Interrupts> Default for IrqGuard<I> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I: Interrupts> Drop for IrqGuard<I> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: saved by `new` on this CPU (`!Send`) in this mode; guards created after this
        // one are scoped inside it and dropped first (the documented nesting rule).
        unsafe { I::restore(self.saved) };
    }
}

impl<I: Interrupts> core::fmt::Debug for IrqGuard<I> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IrqGuard").finish_non_exhaustive()
    }
}

/// Runs `f` with the calling CPU's interrupts masked, then restores their state (also when `f`
/// panics and unwinds).
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use kernel_locks::irq::{testing::TestInterrupts, without_interrupts, Interrupts};
///
/// let inside = without_interrupts::<TestInterrupts, _>(|| TestInterrupts::are_enabled());
/// assert!(!inside);
/// assert!(TestInterrupts::are_enabled());
/// # }
/// ```
#[inline]
pub fn without_interrupts<I: Interrupts, R>(f: impl FnOnce() -> R) -> R {
    let _masked = IrqGuard::<I>::new();
    f()
}

/// The interrupt state saved by [`KernelLockIrq::lock_irqsave`], consumed by
/// [`KernelLockIrq::unlock_irqrestore`].
///
/// Dropping it restores nothing: the CPU stays masked (the lock it stands for is still held, and
/// unmasking then is what brings the deadlock). `!Send`.
#[must_use = "pass the token to `unlock_irqrestore`, or interrupts stay masked"]
pub struct IrqSaved<I: Interrupts> {
    saved: I::State,
    /// Makes the token `!Send` and `!Sync`: it belongs to the CPU that saved the state.
    _cpu_bound: CpuBound,
}

impl<I: Interrupts> IrqSaved<I> {
    /// The saved state, restored by `unlock_irqrestore`.
    pub fn saved(&self) -> I::State {
        self.saved
    }
}

impl<I: Interrupts> core::fmt::Debug for IrqSaved<I> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IrqSaved").finish_non_exhaustive()
    }
}

/// Interrupt-safe acquisitions of any [`KernelLock`]: the calling CPU's interrupts masked from
/// before the lock is taken until after it is released. Implemented for every lock.
pub trait KernelLockIrq: KernelLock {
    /// Masks the calling CPU's interrupts, then acquires the lock for `cpu`, waiting as long as
    /// needed. Release with [`unlock_irqrestore`](Self::unlock_irqrestore).
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range (interrupts are restored first).
    #[inline(always)]
    #[track_caller]
    fn lock_irqsave<I: Interrupts>(&self, cpu: CpuId) -> IrqSaved<I> {
        let masked = IrqGuard::<I>::new();
        self.lock(cpu);
        IrqSaved {
            saved: disarm(masked),
            _cpu_bound: CpuBound::new(),
        }
    }

    /// Masks the calling CPU's interrupts and acquires the lock for `cpu` if that is possible
    /// without waiting; if it is not, restores the interrupt state and returns `None`.
    ///
    /// # Panics
    /// If `cpu` is out of the lock's range.
    #[inline(always)]
    #[track_caller]
    fn try_lock_irqsave<I: Interrupts>(&self, cpu: CpuId) -> Option<IrqSaved<I>> {
        let masked = IrqGuard::<I>::new();
        self.try_lock(cpu).then(|| IrqSaved {
            saved: disarm(masked),
            _cpu_bound: CpuBound::new(),
        })
    }

    /// Releases the lock held by `cpu`, then restores the interrupt state `token` saved.
    ///
    /// # Safety
    /// As [`KernelLock::unlock`]: `cpu` holds the lock, taken by the
    /// [`lock_irqsave`](Self::lock_irqsave) or [`try_lock_irqsave`](Self::try_lock_irqsave)
    /// that returned `token`, on this CPU; and every interrupt state saved after it has been
    /// restored (see [`Interrupts::restore`]).
    #[inline(always)]
    #[track_caller]
    unsafe fn unlock_irqrestore<I: Interrupts>(&self, cpu: CpuId, token: IrqSaved<I>) {
        // SAFETY: the caller's contract: `cpu` holds the lock.
        unsafe { self.unlock(cpu) };
        // The release store is above in program order, and `restore` is a compiler barrier:
        // an interrupt taken from here on finds the lock free on this CPU.
        // SAFETY: `token` was saved on this CPU (`!Send`), and later saves are restored
        // (the caller's contract).
        unsafe { I::restore(token.saved) };
    }
}

impl<L: KernelLock + ?Sized> KernelLockIrq for L {}

/// The state of a guard whose lock was taken, without restoring it: the state moves into a
/// token or an [`IrqGuarded`], which restores it after the release.
#[inline(always)]
fn disarm<I: Interrupts>(guard: IrqGuard<I>) -> I::State {
    let saved = guard.saved;
    core::mem::forget(guard);
    saved
}

/// A lock guard `G` taken with the calling CPU's interrupts masked: derefs to the data as `G`
/// does; on drop releases the lock (drops `G`), then restores the interrupt state.
///
/// Returned by [`Mutex::lock_irqsave`], [`RwLock::read_irqsave`], [`RwLock::write_irqsave`]
/// and their `try_` forms. `!Send`, as the guard it wraps.
#[must_use = "dropping the guard releases the lock and restores interrupts at once"]
pub struct IrqGuarded<G, I: Interrupts> {
    // Fields drop in declaration order: the lock is released before the interrupt state is
    // restored. The order is what makes the guard interrupt-safe; keep it.
    guard: G,
    masked: IrqGuard<I>,
}

/// [`Mutex::lock_irqsave`]'s guard.
pub type MutexIrqGuard<'a, L, T, I> = IrqGuarded<MutexGuard<'a, L, T>, I>;
/// [`RwLock::read_irqsave`]'s guard.
pub type RwLockReadIrqGuard<'a, L, T, I> = IrqGuarded<RwLockReadGuard<'a, L, T>, I>;
/// [`RwLock::write_irqsave`]'s guard.
pub type RwLockWriteIrqGuard<'a, L, T, I> = IrqGuarded<RwLockWriteGuard<'a, L, T>, I>;

impl<G, I: Interrupts> IrqGuarded<G, I> {
    /// The lock guard inside (for its `cpu()`).
    pub fn guard(&self) -> &G {
        &self.guard
    }

    /// The interrupt state restored on drop.
    pub fn saved(&self) -> I::State {
        self.masked.saved
    }
}

impl<G: Deref, I: Interrupts> Deref for IrqGuarded<G, I> {
    type Target = G::Target;

    #[inline(always)]
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut, I: Interrupts> DerefMut for IrqGuarded<G, I> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

impl<G: core::fmt::Debug, I: Interrupts> core::fmt::Debug for IrqGuarded<G, I> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IrqGuarded")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

/// `$name` and `$try_name`: the wrapper's `$lock` / `$try_lock` with the calling CPU's interrupts
/// masked first, returning `IrqGuarded<$guard>`.
macro_rules! irqsave_items {
    (
        $mode:literal, $guard:ident:
        $name:ident via $lock:ident, $try_name:ident via $try_lock:ident
    ) => {
        #[doc = concat!(
            "Masks the calling CPU's interrupts, then acquires the lock", $mode, " for `cpu`, ",
            "waiting as long as needed. The guard releases the lock on drop, then restores ",
            "the interrupt state (see the [`irq`](crate::irq) module).\n\n",
            "# Panics\n",
            "If `cpu` is out of the lock's range (interrupts are restored first)."
        )]
        #[inline]
        #[track_caller]
        pub fn $name<I: Interrupts>(&self, cpu: CpuId) -> IrqGuarded<$guard<'_, L, T>, I> {
            let masked = IrqGuard::new();
            IrqGuarded {
                guard: self.$lock(cpu),
                masked,
            }
        }

        #[doc = concat!(
            "Masks the calling CPU's interrupts and acquires the lock", $mode, " for `cpu` if ",
            "that is possible without waiting; if it is not, restores the interrupt state and ",
            "returns `None`. The guard releases the lock on drop, then restores the interrupt ",
            "state.\n\n",
            "# Panics\n",
            "If `cpu` is out of the lock's range."
        )]
        #[inline]
        #[track_caller]
        pub fn $try_name<I: Interrupts>(
            &self,
            cpu: CpuId,
        ) -> Option<IrqGuarded<$guard<'_, L, T>, I>> {
            let masked = IrqGuard::new();
            self.$try_lock(cpu)
                .map(|guard| IrqGuarded { guard, masked })
        }
    };
}

impl<L: KernelLock, T: ?Sized> Mutex<L, T> {
    irqsave_items!("", MutexGuard: lock_irqsave via lock, try_lock_irqsave via try_lock);
}

impl<L: KernelRwLock, T: ?Sized> RwLock<L, T> {
    irqsave_items!(" shared", RwLockReadGuard: read_irqsave via read, try_read_irqsave via try_read);
    irqsave_items!(
        " exclusively",
        RwLockWriteGuard: write_irqsave via write,
        try_write_irqsave via try_write
    );
}

#[cfg(any(test, all(feature = "testing", not(target_os = "none"))))]
pub mod testing;
