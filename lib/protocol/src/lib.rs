//! The protocol between the bootable images and the host tools.
//!
//! A guest says everything the host judges on its console, one line at a time: the test plan,
//! one line per test, the sentinel after the last test, the programs it waits for, the
//! shutdown verdict, benchmark records between two markers and kernel lock traces. The host
//! (`cargo xtask qemu --tests`, `test`, `bench`, `trace`, `flash --check`) reads those lines
//! back. Both sides use this crate, so a line is spelled in exactly one place:
//!
//! * [`console`]: every line kind as a type whose `Display` is the line the guest prints, and
//!   [`console::Line::parse`], which reads a console line back into the same kinds;
//! * [`record`]: the raw benchmark record a producer (a guest or a hosted benchmark) emits,
//!   written as one JSON object with `core::fmt` only, no allocation;
//! * behind the `std` feature, the host side: [`record::RawRecord`] read from JSON, and
//!   [`results`], the schema of the `results.json` every benchmark suite writes;
//! * [`doc`]: the tables of `docs/bench-protocol.md`, generated from the definitions here (a
//!   test checks the document against them, so it cannot drift).
//!
//! The crate is `no_std` without features: the images link it.

#![cfg_attr(not(feature = "std"), no_std)]

pub mod console;
pub mod doc;
pub mod record;
#[cfg(feature = "std")]
pub mod results;
