//! The architecture-neutral half of the bootable images: the boot sequence around the
//! architecture's own steps ([`boot`]), the kernel command line ([`cmdline`]), the kernel
//! object's static store and the construction of the initial system (address spaces, threads,
//! endpoints, notifications, capabilities, the root task), the debug calls user programs make
//! and the shutdown once they all reported ([`debugcalls`]), the user ELF parser and loader
//! ([`elf`]), the in-kernel self-tests every architecture runs ([`selftest`]), the benchmark
//! records (`mode=bench`), the lock-cost measurement the image makes itself in kernel mode
//! ([`lockcost`]) and the memory nodes the memory system is given ([`numa`]), shared by
//! `image-x86` and `image-armv7`.
//!
//! What differs between the architectures reaches this crate through the HAL's
//! `hal_common::ArchHal` and `hal_common::UserPaging` (console, clocks, exit, the other cores,
//! paging, the user register context) and two small traits each image implements:
//! [`Machine`] (its HAL, the user ELF it accepts, the device memory and memory nodes of its
//! machines; [`System`] makes the [`Arch`] the builder uses of it) and
//! [`debugcalls::ArchFacts`] (the fault vectors and the counters).
#![no_std]

pub mod bench;
pub mod boot;
pub mod cmdline;
pub mod debugcalls;
pub mod elf;
pub mod lockcost;
pub mod numa;
pub mod selftest;
pub mod strategy;
pub mod system;
pub mod trace;

pub use system::{build, place_kernel, Arch, Machine, Plan, Setup, System};
