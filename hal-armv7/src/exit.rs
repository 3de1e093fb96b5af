//! Leaving QEMU with a status code, and reading the command line, through Arm semihosting.
//!
//! Run QEMU with `-semihosting`. A semihosting call is `HLT #0xF000` in ARM state with the
//! operation in r0 and its argument in r1; QEMU intercepts it before any exception is taken
//! (privileged modes only). The semihosting specification's other A32 trap, `svc #0x123456`,
//! would make the SVC vector test the mode it came from on every system call; with HLT the
//! kernel makes no SVC of its own (see `boot`'s SVC vector). [`exit_qemu`] uses
//! `SYS_EXIT_EXTENDED` (0x20) with the reason
//! `ADP_Stopped_ApplicationExit` and the exit code, so QEMU exits with exactly that status:
//! 0 = [`ExitCode::Success`], 1 = [`ExitCode::Failure`]. (The older `SYS_EXIT` cannot carry a
//! status on 32-bit Arm; PSCI SYSTEM_OFF always exits 0.)
//!
//! Without `-semihosting` (or a debugger) the HLT is an undefined instruction on ARMv7 (it is
//! an ARMv8 encoding, UNDEFINED before and with halting debug off): the undefined-instruction
//! vector recognises it in a kernel mode and returns -1, so [`exit_qemu`] reports that and
//! halts the core and [`cmdline`] returns `None`, instead of anything crashing.
//!
//! Status 0 can also come from QEMU itself (a guest reset with `-no-reboot`), so test scripts
//! should also check the kernel's final log line, as `scripts/qemu-boot-demo.sh` does.

use core::arch::asm;

/// SYS_GET_CMDLINE operation.
const SYS_GET_CMDLINE: u32 = 0x15;
/// SYS_EXIT_EXTENDED operation.
const SYS_EXIT_EXTENDED: u32 = 0x20;
/// ADP_Stopped_ApplicationExit reason code.
const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x2_0026;
/// The semihosting trap, `HLT #0xF000` in ARM state (cond AL): written as a word, the
/// assembler takes HLT for ARMv8 only.
pub(crate) const HLT_SEMIHOSTING: u32 = 0xE10F_0070;

/// The statuses this HAL exits QEMU with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// Everything checked passed: QEMU exits with status 0.
    Success = 0,
    /// A check failed, an exception or a panic happened: QEMU exits with status 1.
    Failure = 1,
}

impl ExitCode {
    /// The status the QEMU process exits with.
    pub const fn qemu_status(self) -> i32 {
        self as i32
    }
}

/// Makes semihosting call `op` with parameter `arg`; returns r0 (-1 if semihosting is off).
///
/// # Safety
/// `arg` must be what `op` expects (for block operations: a valid, readable and writable
/// parameter block).
unsafe fn semihosting_call(op: u32, arg: usize) -> u32 {
    let r0: u32;
    // SAFETY: the caller's contract. If the undefined-instruction exception is really taken
    // (no semihosting), its vector returns here with r0 = -1 and every other register as it
    // was (it runs on the undefined mode's own stack and banked LR).
    unsafe {
        asm!(
            ".inst {hlt}",
            hlt = const HLT_SEMIHOSTING,
            inlateout("r0") op => r0,
            in("r1") arg,
            options(nostack)
        );
    }
    r0
}

/// Exits QEMU with `code`. If semihosting is not enabled, says so and halts this core.
pub fn exit_qemu(code: ExitCode) -> ! {
    let block: [u32; 2] = [ADP_STOPPED_APPLICATION_EXIT, code as u32];
    // SAFETY: SYS_EXIT_EXTENDED takes a pointer to the two-word block above.
    unsafe { semihosting_call(SYS_EXIT_EXTENDED, block.as_ptr() as usize) };
    crate::console::emergency_print(format_args!(
        "hal-armv7: semihosting unavailable (run QEMU with -semihosting): cannot exit with {:?}; cpu {} halted\n",
        code,
        crate::percpu::cpu_id()
    ));
    crate::cpu::halt_forever()
}

/// Reads the semihosting command line into `buf` (QEMU: the `-semihosting-config arg=...`
/// values, else the kernel file name followed by `-append`). `None` without semihosting.
pub fn cmdline(buf: &mut [u8]) -> Option<&str> {
    let mut block: [usize; 2] = [buf.as_mut_ptr() as usize, buf.len()];
    // SAFETY: SYS_GET_CMDLINE writes at most `block[1]` bytes to `block[0]`, then stores the
    // length it wrote in `block[1]`.
    let r = unsafe { semihosting_call(SYS_GET_CMDLINE, block.as_mut_ptr() as usize) };
    if r != 0 {
        return None;
    }
    let len = block[1].min(buf.len());
    let bytes = &buf[..len];
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(bytes);
    core::str::from_utf8(bytes).ok()
}
