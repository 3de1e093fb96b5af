//! PSCI (Power State Coordination Interface) calls, used on virt to start secondary cores.
//!
//! QEMU's virt implements PSCI itself. Its conduit follows the exception levels it gives the
//! guest: without `virtualization=on` (no EL2) calls are made with `hvc`, which QEMU traps;
//! with EL2 present QEMU expects `smc` (the kernel is entered in HYP mode then, so the entry
//! mode tells which). With `secure=on` there is no QEMU PSCI at all (firmware's job).

use core::arch::asm;

/// PSCI_VERSION function ID.
pub const PSCI_VERSION: u32 = 0x8400_0000;
/// CPU_ON (SMC32) function ID.
pub const CPU_ON: u32 = 0x8400_0003;
/// SYSTEM_OFF function ID (QEMU exits with status 0: not used for results).
pub const SYSTEM_OFF: u32 = 0x8400_0008;

/// How PSCI calls reach the implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    /// `hvc #0` (virt without EL2).
    Hvc,
    /// `smc #0` (virt with EL2, or firmware at EL3).
    Smc,
}

impl Conduit {
    /// The instruction's name.
    pub const fn name(self) -> &'static str {
        match self {
            Conduit::Hvc => "hvc",
            Conduit::Smc => "smc",
        }
    }
}

/// A PSCI error return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsciError {
    /// -1.
    NotSupported,
    /// -2 (e.g. no such core).
    InvalidParameters,
    /// -3.
    Denied,
    /// -4: the core is already on.
    AlreadyOn,
    /// -5.
    OnPending,
    /// -6.
    InternalFailure,
    /// Anything else.
    Other(i32),
}

impl PsciError {
    fn from_code(code: i32) -> PsciError {
        match code {
            -1 => PsciError::NotSupported,
            -2 => PsciError::InvalidParameters,
            -3 => PsciError::Denied,
            -4 => PsciError::AlreadyOn,
            -5 => PsciError::OnPending,
            -6 => PsciError::InternalFailure,
            c => PsciError::Other(c),
        }
    }
}

/// Makes the PSCI call `fid` with three arguments through `conduit`; returns r0.
///
/// # Safety
/// `conduit` must be the one the platform implements: a call through the wrong one traps to
/// an exception level with no handler. The call's own effects (e.g. CPU_ON starting a core at
/// an entry point) are the caller's responsibility.
pub unsafe fn call(conduit: Conduit, fid: u32, a1: u32, a2: u32, a3: u32) -> i32 {
    let r0: u32;
    // SMCCC: r0-r3 carry arguments and results, the other registers are preserved; `$insn`
    // enters the conduit's exception level after the assembler allows it (`$ext`).
    macro_rules! smccc {
        ($ext:literal, $insn:literal) => {
            asm!(
                $ext,
                $insn,
                inlateout("r0") fid => r0,
                inlateout("r1") a1 => _,
                inlateout("r2") a2 => _,
                inlateout("r3") a3 => _,
                options(nostack)
            )
        };
    }
    match conduit {
        // SAFETY: the caller's contract (the platform's conduit).
        Conduit::Hvc => unsafe { smccc!(".arch_extension virt", "hvc #0") },
        // SAFETY: as above.
        Conduit::Smc => unsafe { smccc!(".arch_extension sec", "smc #0") },
    }
    r0 as i32
}

/// PSCI_VERSION: `major << 16 | minor`.
pub fn version(conduit: Conduit) -> u32 {
    // SAFETY: PSCI_VERSION has no side effects; the conduit comes from the entry mode.
    unsafe { call(conduit, PSCI_VERSION, 0, 0, 0) as u32 }
}

/// CPU_ON: starts the core with affinity `mpidr` at physical address `entry` (ARM state, MMU
/// off) with `context` in r0.
///
/// # Safety
/// `entry` must be code that can run on a fresh core with the MMU off.
pub unsafe fn cpu_on(
    conduit: Conduit,
    mpidr: u32,
    entry: u32,
    context: u32,
) -> Result<(), PsciError> {
    // SAFETY: forwarded contract; the memory the new core reads first was cleaned to the
    // point of coherency by the caller.
    match unsafe { call(conduit, CPU_ON, mpidr, entry, context) } {
        0 => Ok(()),
        e => Err(PsciError::from_code(e)),
    }
}
