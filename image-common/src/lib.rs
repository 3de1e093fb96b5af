//! The architecture-neutral half of the bootable images: the kernel object's static store and
//! the construction of the initial system (address spaces, threads, endpoints, notifications,
//! capabilities, the root task), the user ELF parser and the benchmark records (`mode=bench`),
//! shared by `image-x86` and `image-armv7`.
//!
//! What differs between the architectures (page tables, the user ELF loader, the user register
//! context and its word size, the console, how to fail) reaches this crate through the [`Arch`]
//! trait, which each image implements in a few lines.
#![no_std]

pub mod bench;
pub mod elf;
pub mod system;

pub use system::{build, place_kernel, Arch, Plan, Setup};
