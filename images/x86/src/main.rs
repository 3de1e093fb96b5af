//! The bootable x86_64 image: the kernel core ([`kernel`]) over the x86 HAL ([`hal_x86`]),
//! with the user programs of [`servers`] embedded, booted by QEMU's PVH loader
//! (`qemu-system-x86_64 -kernel image-x86`). `cargo xtask qemu` builds and runs it.
//!
//! # Boot
//! 1. The HAL boots the bootstrap processor (PVH, long mode, GDT/IDT, console, ACPI, clocks) and
//!    calls [`boot::kernel_main`].
//! 2. The command line (`-append`) chooses the lock (`lock=clh|ticket|brlock|fine|rtm|none`), the
//!    mode (`mode=demo|test|bench|fuzz|net`) and the ping-pong length (`rounds=N`); a bad value
//!    stops the boot with a message and the failure status.
//! 3. The other cores start (INIT-SIPI-SIPI) and wait; the boot log prints `cpus online: N` and
//!    `lock: NAME`.
//! 4. `image_common::boot::Start`, monomorphised per locking strategy, builds the kernel object
//!    and the initial objects (address spaces with the user ELF loaded, threads, endpoints,
//!    notifications, capabilities) with this image's [`system::X86`], as the hosted test
//!    harness does.
//! 5. The root task runs first on core 0: it binds the pager of the pager test, resumes every
//!    other thread and releases the other cores, which then enter the scheduler.
//! 6. Each core runs an IPC ping-pong pair (client Call / server ReplyRecv); every program
//!    reports "done" through a debug call; when all did, the image shuts QEMU down through
//!    `isa-debug-exit` with the success status (33), or failure (35) if anything failed.
//!
//! In benchmark mode (`mode=bench bench=ipc|multicore|clientserver runs=1..64`, default 16
//! samples per record, with `clients=1..8` and `variant=shared|dedicated` for `clientserver`)
//! the image builds the benchmark's threads instead of the demo (see
//! `image_common::system::build_bench`), starts no tick timer, collects the samples the bench
//! programs report through the `BENCH` debug call and, once every client reported, prints one
//! JSON record per line between `BENCH-JSON-BEGIN` and `BENCH-JSON-END`
//! (`docs/bench-protocol.md`, `image_common::bench`) and shuts down as the demo does.
//! User programs time with `rdtsc`.
//!
//! In test mode (`mode=test`) the image also runs in-kernel self-tests and the user-level test
//! programs (system-call errors, notification, pager, fault containment) and prints one
//! `TEST <name> ... ok|FAILED|skipped` line each, `TESTS PLANNED n` first and `ALL TESTS RAN n`
//! last.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "image-x86 is a kernel: build it with --target x86_64-unknown-none and boot it with \
         `cargo xtask qemu`"
    );
}

#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod debugcalls;
#[cfg(target_os = "none")]
mod selftest;
#[cfg(target_os = "none")]
mod system;
