//! The bootable ARMv7-A image: the kernel core ([`kernel`]) over the ARMv7 HAL ([`hal_armv7`]),
//! with the user programs of [`servers`] embedded, loaded by QEMU as an ELF
//! (`qemu-system-arm -M sabrelite|virt -kernel image-armv7 -semihosting`). `cargo xtask qemu
//! --arch armv7` builds and runs it. It mirrors `image-x86`.
//!
//! # Boot
//! 1. The HAL boots core 0 (vectors, SCU/SMP bit, MMU and caches, console, GIC, timers) and
//!    calls [`boot::kernel_main`].
//! 2. The semihosting command line (`-append`) chooses the lock (`lock=clh|ticket|brlock|fine|
//!    rtm|none`), the mode (`mode=demo|test|bench`) and the ping-pong length (`rounds=N`); a bad
//!    value stops the boot with a message and the failure status.
//! 3. The other cores start (SRC on sabrelite, PSCI on virt) and wait; the boot log prints
//!    `cpus online: N` and `lock: NAME`.
//! 4. `image_common::boot::Start`, monomorphised per locking strategy, builds the kernel object
//!    and the initial objects (address spaces with the user ELF loaded, threads, endpoints,
//!    notifications, capabilities) with this image's [`system::Armv7`].
//! 5. The root task runs first on core 0 and releases the other cores.
//! 6. Each core runs an IPC ping-pong pair; when every program reported, the image exits QEMU
//!    through semihosting with status 0 (success) or 1.
//!
//! In benchmark mode (`mode=bench bench=ipc|multicore|clientserver runs=1..64`, default 16
//! samples per record, with `clients=1..8` and `variant=shared|dedicated` for `clientserver`)
//! the image builds the benchmark's threads instead of the demo (see
//! `image_common::system::build_bench`), starts no tick timer, collects the samples the bench
//! programs report through the `BENCH` debug call and, once every client reported, prints one
//! JSON record per line between `BENCH-JSON-BEGIN` and `BENCH-JSON-END`
//! (`docs/bench-protocol.md`, `image_common::bench`) and shuts down as the demo does.
//! User programs time with PMCCNTR where the core has it (`-M virt`: the HAL enables it for
//! user mode in benchmark mode), else with the `COUNTER` debug call (`-M sabrelite`, where
//! only the batch-timed benchmarks run).
//!
//! In test mode (`mode=test`) the image also runs in-kernel self-tests and the user-level test
//! programs and prints `TESTS PLANNED n`, one `TEST <name> ... ok|FAILED|skipped` line each and
//! `ALL TESTS RAN n`.
#![cfg_attr(all(target_arch = "arm", target_os = "none"), no_std, no_main)]

#[cfg(not(all(target_arch = "arm", target_os = "none")))]
fn main() {
    eprintln!(
        "image-armv7 is a kernel: build it with --target armv7a-none-eabi and boot it with \
         `cargo xtask qemu --arch armv7`"
    );
}

#[cfg(all(target_arch = "arm", target_os = "none"))]
mod boot;
#[cfg(all(target_arch = "arm", target_os = "none"))]
mod debugcalls;
#[cfg(all(target_arch = "arm", target_os = "none"))]
mod selftest;
#[cfg(all(target_arch = "arm", target_os = "none"))]
mod system;
