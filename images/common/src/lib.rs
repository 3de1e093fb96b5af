//! The architecture-neutral half of the bootable images: the boot sequence around the
//! architecture's own steps ([`boot`]), the kernel command line ([`cmdline`]), the kernel object's static store and the construction of the initial system
//! (address spaces, threads, endpoints, notifications, capabilities, the root task), the debug
//! calls user programs make and the shutdown once they all reported ([`debugcalls`]), the user
//! ELF parser, the benchmark records (`mode=bench`) and the memory nodes the memory system is
//! given ([`numa`]), shared by `image-x86` and `image-armv7`.
//!
//! What differs between the architectures reaches this crate through two traits each image
//! implements in a few lines: [`Arch`] for building the system (page tables, the user ELF
//! loader, the user register context and its word size, the console, how to fail) and
//! [`debugcalls::DebugArch`] for serving the debug calls (cycle counters, how to exit QEMU and
//! wake the other cores, the fault records).
#![no_std]

pub mod bench;
pub mod boot;
pub mod cmdline;
pub mod debugcalls;
pub mod elf;
pub mod numa;
pub mod selftest;
pub mod strategy;
pub mod system;
pub mod trace;

pub use system::{build, place_kernel, Arch, Plan, Setup};
