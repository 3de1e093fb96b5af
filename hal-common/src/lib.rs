//! The architecture-neutral half of the two hardware layers (`hal-x86`, `hal-armv7`).
//!
//! # Why a crate of its own
//! Both HALs do the same things around their architecture-specific cores: they keep every
//! thread's saved user context and return to the thread the kernel chose, record user faults,
//! hand interrupts that arrive before a core can enter the kernel to its first entry, print
//! whole lines to a serial port under one lock, recycle page-table frames after TLB
//! shoot-downs, count ticks and IPIs per core and device interrupts per line, start the other
//! cores, and check all of that in a boot demo; the images build on the same machine
//! operations and user paging. Each is written once here, so that the architectures cannot disagree on an ordering or a record's
//! fields, generic over a small trait that names the few things only the architecture knows
//! (the register frame, how to enter user mode, how to sleep, the interrupt mask, the machine
//! operations of [`ArchHal`] and the user paging of [`UserPaging`]). The HALs keep the
//! assembly, the interrupt controllers and the page-table formats; a new architecture adds
//! those and the trait implementations.
//!
//! Nothing here uses inline assembly, so the crate builds and its unit tests run on the host.
#![cfg_attr(not(test), no_std)]

pub mod arch;
pub mod console;
pub mod demo;
pub mod init_once;
pub mod irq;
pub mod percpu;
pub mod smp;
pub mod table_pool;
pub mod usermode;

pub use arch::{ArchHal, UserPaging};
pub use init_once::InitOnce;
