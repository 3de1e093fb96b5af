//! User-level programs run by the kernel, and the small typed library they call the kernel with.
//!
//! * [`sys`]: the system calls as functions over typed arguments (capability slots, messages,
//!   rights), built on the kernel's own [`abi::Syscall`] encoding so the two cannot drift
//!   apart; results come back as `Result<_, abi::Error>`.
//! * [`debug`]: the image's debug calls (console output, "done" reports, shutdown), which the
//!   x86 HAL hands to the image instead of the kernel core.
//! * [`abi`]: what the image and the programs agree on: program roles, capability slot layout,
//!   user memory layout, debug call numbers.
//! * [`programs`]: the root task, the IPC ping-pong client and server, the fault and error
//!   tests, the pager test.
//! * [`memtest`], [`devtest`]: the root task's tests of memory capabilities and of a device
//!   interrupt, in test mode; [`virtio`]: a user-level virtio-mmio transport and queue.
//! * [`net`]: the network server of `mode=net`: a virtio-net driver, a smoltcp TCP/IP stack
//!   and a RESP2 key-value server.
//! * [`fuzz`]: the in-guest system-call fuzzer of `mode=fuzz` and its drain server.
//! * [`bench`](mod@bench): the kernel IPC benchmark programs (one-way IPC, round trips, throughput).
//! * [`memory`]: the memory system of `mode=bench bench=memory`: a loader that creates per-core
//!   (or one global) user-level pagers and a workload at run time, and its checks.
//!
//! # How programs are built and started
//! `src/bin/user.rs` is one static user ELF (linked at 4 MiB by `user.ld`) holding every
//! program; its entry `_start(role, a, b)` runs the program named by `role`. The x86 image
//! (`image-x86`) embeds it, loads a copy into each user address space, and the boot code
//! creates the threads and their capabilities (the kernel has no call yet to set a new thread's
//! registers, so a root task cannot create runnable threads itself). The root task, the first
//! thread that runs, then starts (Resumes) every other thread, binds the pager, and releases the
//! other cores.
#![no_std]

pub mod abi;
pub mod bench;
pub mod debug;
pub mod devtest;
pub mod fuzz;
pub mod hello;
pub mod memory;
pub mod memtest;
pub mod net;
pub mod programs;
pub mod sys;
pub mod virtio;
