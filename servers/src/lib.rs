//! User-level programs run by the kernel, the drivers and systems they are built from, and the
//! small typed library they call the kernel with.
//!
//! The library every program uses:
//! * [`sys`]: the system calls as functions over typed arguments (capability slots, messages,
//!   rights), built on the kernel's own [`abi::Syscall`](::abi::Syscall) encoding (the `abi` crate) so the two
//!   cannot drift apart; results come back as `Result<_, abi::Error>`; and the raw trap
//!   ([`sys::raw`]) the benchmarks and the fuzzer use;
//! * [`debug`]: the image's debug calls (console output, "done" reports, shutdown), which the
//!   HAL hands to the image instead of the kernel core;
//! * [`image`]: what the image and the programs agree on beyond the kernel's ABI: program
//!   roles, capability slot layout, user memory layout, debug call numbers, the benchmarks'
//!   and the memory system's parameters.
//!
//! What runs:
//! * [`programs`]: the programs of the user ELF, selected by role ([`programs::PROGRAMS`]):
//!   the root task, the IPC ping-pong client and server, the fault and error tests, the pager
//!   test, the root task's memory and device tests, the IPC benchmarks, the system-call fuzzer
//!   and the example program;
//! * [`memory`]: the memory system of `mode=bench bench=memory`: a loader that creates per-core
//!   (or one global) user-level pagers and a workload at run time, and its checks;
//! * [`net`]: the network server of `mode=net`: the NIC driver's frame mover, a smoltcp TCP/IP
//!   stack per core and a RESP2 key-value server.
//!
//! What they drive:
//! * [`drivers`]: user-level device drivers: the virtio-mmio transport and the NICs.
//!
//! # How programs are built and started
//! `src/bin/user.rs` is one static user ELF (linked at 4 MiB by `user.ld`) holding every
//! program; its entry `_start(role, a, b)` runs the program named by `role`. The images embed
//! it, load a copy into each user address space, and the boot code creates the threads and
//! their capabilities (the kernel has no call to set a new thread's registers, so a root task
//! cannot create runnable threads itself). The root task, the first thread that runs, then
//! starts (Resumes) every other thread, binds the pager, and releases the other cores.
#![no_std]

pub mod debug;
pub mod drivers;
pub mod image;
pub mod memory;
pub mod net;
pub mod programs;
pub mod sys;
