//! The kernel under QEMU: building its images, launching guests, reading their consoles and
//! judging what the guest reports.
//!
//! * [`qemu`]: `cargo xtask qemu` and the guest launcher every command boots images with
//!   (image builds, QEMU command lines, exit-status and console verdicts, the test suite's
//!   report).
//! * [`board`]: the board files in `boards/` (memory map, console, QEMU model, flash medium).
//! * [`net`]: the network server under QEMU (`qemu --net`), its port forwarding and the RESP
//!   client the checks and benchmarks drive it with.
//! * [`exectrace`]: one IPC round trip traced instruction by instruction (`trace`, and the
//!   benchmarks' barrier counts).
//!
//! The clap options of `cargo xtask qemu` ([`qemu::QemuArgs`]) live beside the code they
//! configure; the other commands reuse them for their guests.

// Their readers are the tools' maintainers (`cargo doc --document-private-items`): the docs
// link to private items on purpose.
#![allow(rustdoc::private_intra_doc_links)]

pub mod board;
pub mod exectrace;
pub mod net;
pub mod qemu;
