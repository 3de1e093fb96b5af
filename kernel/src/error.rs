//! Errors a system call returns to its caller (in result register 0): the ABI's.

pub use abi::Error;
