//! The kernel's system-call ABI: what a user program and the kernel must agree on, and nothing
//! else.
//!
//! Call numbers and the register encoding ([`syscall`]: [`Syscall`] with its `decode` and
//! `encode`, results), errors ([`Error`]), capability rights ([`Rights`]), page attributes
//! ([`PageAttrs`]), capability slots ([`CapSlot`]), messages and the fault-message labels, and
//! the limits a program sees ([`limits`]). The kernel depends on it and re-exports it where
//! these items have always been (`kernel::Syscall`, `kernel::Error`, `kernel::config::*`...);
//! user programs (`servers`) depend on it alone, as seL4's programs use libsel4 and Hubris's
//! tasks its `abi` crate, so a program never links kernel code. `docs/abi.md` documents every
//! call, and a test checks that document against this crate.
#![no_std]

pub mod error;
pub mod ids;
pub mod limits;
pub mod page;
pub mod rights;
pub mod syscall;

pub use error::Error;
pub use ids::CapSlot;
pub use page::PageAttrs;
pub use rights::Rights;
pub use syscall::{MintTarget, Msg, Regs, Syscall, EXCEPTION_LABEL, FAULT_LABEL};
