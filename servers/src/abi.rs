//! What the image's boot code and the user programs agree on.

/// Address the user ELF is linked at.
pub const USER_BASE: u64 = 0x40_0000;
/// Top of the highest user stack; thread `i` of an address space has its stack below
/// `USER_STACK_TOP - i * USER_STACK_STRIDE`.
#[cfg(not(target_arch = "arm"))]
pub const USER_STACK_TOP: u64 = 0x7FFF_0000_0000;
/// Top of the highest user stack (ARMv7: below the kernel's RAM window at 0x4000_0000, which
/// every address space maps).
#[cfg(target_arch = "arm")]
pub const USER_STACK_TOP: u64 = 0x3FF0_0000;
/// Distance between the stacks of threads sharing an address space.
pub const USER_STACK_STRIDE: u64 = 0x10_0000;
/// Size of each user stack.
pub const USER_STACK_SIZE: u64 = 32 * 1024;
/// The page the pager test touches before it is mapped.
#[cfg(not(target_arch = "arm"))]
pub const PAGER_TEST_ADDR: u64 = 0x5000_0000;
/// The page the pager test touches before it is mapped (ARMv7: user space is below
/// 0x4000_0000).
#[cfg(target_arch = "arm")]
pub const PAGER_TEST_ADDR: u64 = 0x3000_0000;

/// Program roles (`_start`'s first argument).
pub mod role {
    /// The root task: starts the others (a = thread caps from slot [`ROOT_FIRST_THREAD`]
    /// (super::slot::ROOT_FIRST_THREAD) on, b = slot of the thread to bind the pager to, 0 for
    /// none).
    pub const ROOT: u64 = 1;
    /// Ping-pong client (a = core, b = round trips).
    pub const CLIENT: u64 = 2;
    /// Ping-pong server (a = core).
    pub const SERVER: u64 = 3;
    /// Faults on purpose (a = one of [`fault`](super::fault)).
    pub const FAULT: u64 = 4;
    /// System-call error checks.
    pub const ERRORS: u64 = 5;
    /// Pager of the pager test.
    pub const PAGER: u64 = 6;
    /// Touches an unmapped page that its pager maps.
    pub const PAGED: u64 = 7;
}

/// What a [`role::FAULT`] program does.
pub mod fault {
    /// Reads an unmapped address (#PF).
    pub const BAD_POINTER: u64 = 0;
    /// Executes `ud2` (#UD).
    pub const INVALID_OPCODE: u64 = 1;
    /// Divides by zero (#DE).
    pub const DIVIDE_BY_ZERO: u64 = 2;
}

/// Capability slots the boot code fills.
pub mod slot {
    /// Every program: its park notification (READ), waited on when it has nothing left to do.
    pub const PARK: usize = 0;
    /// Client, server, errors, pager: the endpoint it works with.
    pub const EP: usize = 1;
    /// Root: the pager test's endpoint (WRITE), to bind as pager.
    pub const ROOT_PAGER_EP: usize = 1;
    /// Root: first thread capability.
    pub const ROOT_FIRST_THREAD: usize = 2;
    /// Errors test: a notification it may signal and wait on (READ | WRITE).
    pub const ERRORS_NTFN: usize = 2;
    /// Errors test: a slot left empty.
    pub const ERRORS_EMPTY: usize = 9;
    /// Pager: the faulting thread's address space (WRITE).
    pub const PAGER_ASPACE: usize = 2;
    /// Pager: the frame to map (READ | WRITE).
    pub const PAGER_FRAME: usize = 3;
}

/// Debug call numbers (`rax`), handled by the image rather than the kernel core.
pub mod debug_nr {
    /// Console output: `a` = byte count (<= 32), the bytes packed little-endian in the other
    /// four argument registers. Lines are collected per thread and printed whole.
    pub const PUT: usize = 0x100;
    /// The program finished its work (counted; the image shuts down when all reported).
    pub const DONE: usize = 0x101;
    /// Root only: stop the machine, `a` = 0 success, else failure.
    pub const EXIT: usize = 0x102;
    /// Root only: let the other cores start scheduling.
    pub const RELEASE: usize = 0x103;
    /// A user program panicked (counted as a failure).
    pub const PANIC: usize = 0x104;
    /// Facts: `a` = [`info`](super::info) selector.
    pub const INFO: usize = 0x105;
}

/// [`debug_nr::INFO`] selectors.
pub mod info {
    /// The calling core.
    pub const CPU: usize = 0;
    /// Cores online.
    pub const CPUS: usize = 1;
    /// Whether the test suite runs (1) or the demo (0).
    pub const TEST_MODE: usize = 2;
    /// The caller's thread index.
    pub const THREAD: usize = 3;
}
