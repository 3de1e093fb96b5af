//! The system-call interface: the ABI crate's (numbers, registers, [`Syscall`], results), re-exported
//! where the kernel has always had it.

pub use abi::syscall::*;
