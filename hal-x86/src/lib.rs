//! The x86_64 hardware abstraction layer: PVH boot under QEMU without a bootloader crate, per-core
//! GDT/TSS/IDT, COM1 console, ACPI MADT, xAPIC SMP bring-up, timer and IPIs, I/O APIC device
//! interrupts, TSC, QEMU exit, and the memory nodes of the ACPI SRAT ([`numa_domain`],
//! [`numa_memory`]).
//!
//! # Boot flow
//! QEMU (`-kernel kernel.elf`) finds the PVH note and enters [`boot`]'s 32-bit code, which builds
//! page tables, enters long mode and calls the bootstrap processor's Rust entry. That sets up
//! this core and the platform ([`Platform`]: command line, memory map, ACPI, CPU features,
//! calibrated clocks), then calls the kernel's main function named with [`entry_point!`]. The
//! kernel starts the other cores with [`smp::start_aps`].
//!
//! # For the kernel's `Hal` trait
//! [`X86Hal`] implements `kernel::Hal` (core index, IPIs, address-space switch, TLB flushes,
//! page-table writes, cycle counter, console) and `hal_common::ArchHal` (clocks, tick timer,
//! sleeping, console, test IPI, QEMU exit: what the images and the boot demo use besides) with
//! thin forwarding `impl`s; device interrupt lines are I/O APIC inputs
//! ([`ioapic`]). [`usermode`] runs user threads: `syscall` entry,
//! per-thread contexts, user exceptions, the idle loop; [`paging`] makes user address spaces
//! (kernel half shared, user half per space) and hands out frames.
//!
//! # Running
//! `hal-x86/scripts/qemu-boot-demo.sh [machine] [smp] [cmdline]` builds the `boot-demo` kernel
//! and runs it; by hand:
//! ```text
//! cargo build --release -p hal-x86 --target x86_64-unknown-none --bin boot-demo
//! qemu-system-x86_64 -M microvm -cpu max -smp 4 -m 256M \
//!     -kernel target/x86_64-unknown-none/release/boot-demo -display none -serial stdio \
//!     -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 -append ""
//! ```
//! Exit status 33 means success (see [`exit`]); `-M q35` and `-M pc` work with the same flags.
//!
//! # Host builds
//! Only the pure parts ([`acpi`], the encodings of [`ioapic`]) build for the host, so that `cargo test -p hal-x86 --lib`
//! runs their unit tests; everything else needs `--target x86_64-unknown-none`.
#![no_std]

pub mod acpi;
pub mod ioapic;
pub mod multiboot2;

#[cfg(target_os = "none")]
pub mod apic;
#[cfg(target_os = "none")]
pub mod boot;
#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod cpu;
#[cfg(target_os = "none")]
pub mod exit;
#[cfg(target_os = "none")]
pub mod gdt;
#[cfg(target_os = "none")]
pub mod interrupts;
#[cfg(target_os = "none")]
pub mod mapprep;
#[cfg(target_os = "none")]
pub mod paging;
#[cfg(target_os = "none")]
pub mod percpu;
#[cfg(target_os = "none")]
pub mod pvh;
#[cfg(target_os = "none")]
pub mod smp;
#[cfg(target_os = "none")]
pub mod time;
#[cfg(target_os = "none")]
pub mod usermode;

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    pub(crate) use hal_common::InitOnce;
    /// The operations the images and the boot demo use besides the kernel's `Hal` trait.
    pub use hal_common::{ArchHal, UserPaging};

    use crate::acpi::{AcpiError, AcpiInfo};
    use crate::apic::IpiKind;
    use crate::cpu::CpuFeatures;
    use crate::percpu::CpuIndex;
    use crate::pvh::BootInfo;
    use crate::time::ClockSource;

    /// Everything the HAL found at boot; handed to the kernel's main function.
    #[derive(Debug)]
    pub struct Platform {
        /// What the PVH loader passed (command line, memory map, RSDP).
        pub boot: BootInfo,
        /// Features of the bootstrap processor.
        pub cpu: CpuFeatures,
        /// ACPI tables (MADT CPUs, PM timer, HPET), or why they could not be read.
        pub acpi: Result<AcpiInfo, AcpiError>,
        /// Local APIC id of the bootstrap processor.
        pub bsp_apic_id: u32,
        /// The I/O APICs programmed at boot (every line masked).
        pub ioapic: crate::ioapic::IoApicReport,
        /// The reference the TSC and APIC timer were calibrated against.
        pub clock: ClockSource,
        /// Top of the bootstrap processor's kernel stack.
        pub stack_top: u64,
    }

    pub(crate) static PLATFORM: InitOnce<Platform> = InitOnce::new();

    /// The platform description, once the bootstrap processor has built it (before the
    /// kernel's main function runs).
    pub fn platform() -> Option<&'static Platform> {
        PLATFORM.get()
    }

    /// The SRAT (memory nodes), if the firmware has one with a valid checksum.
    pub fn srat() -> Option<&'static crate::acpi::Srat> {
        platform()?.acpi.as_ref().ok()?.srat.as_ref()
    }

    /// The proximity domain (memory node) of core `cpu` in the ACPI SRAT: `None` without an
    /// SRAT, for a core not started yet, or one whose local APIC the SRAT does not list.
    pub fn numa_domain(cpu: CpuIndex) -> Option<u32> {
        let apic_id = crate::percpu::PERCPU.get(cpu)?.apic_id();
        (apic_id != u32::MAX).then_some(())?;
        srat()?.domain_of_apic(apic_id)
    }

    /// The memory ranges of the proximity domains in the ACPI SRAT (enabled entries, including
    /// hot-pluggable ones), empty without an SRAT.
    pub fn numa_memory() -> &'static [crate::acpi::MemoryAffinity] {
        srat().map_or(&[], |s| s.memory())
    }

    /// The x86_64 HAL: the kernel's `Hal` trait and [`hal_common::ArchHal`] (what the images
    /// and the boot demo need besides). All operations are callable from any core.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct X86Hal;

    /// The calling core's interrupt mask (RFLAGS.IF: `cli`, `sti`), for the shared HAL code: the console,
    /// the page-table pool, [`hal_common::ArchHal`].
    impl hal_common::console::IrqState for X86Hal {
        hal_common::irq_state_forwards!(crate);
    }

    /// The operations the images and the boot demo share ([`hal_common::arch`]) on x86_64.
    impl hal_common::ArchHal for X86Hal {
        // Cycles: the TSC.
        hal_common::arch_hal_forwards!(crate, time);
        /// The local APIC timer, periodic, its count from the calibrated APIC timer rate.
        fn timer_start(hz: u32) {
            let count = crate::time::apic_timer_hz() / u64::from(hz.max(1));
            crate::apic::timer_start_periodic(count.min(u64::from(u32::MAX)) as u32);
        }
        fn timer_stop() {
            crate::apic::timer_stop();
        }
        fn wait_for_interrupt() {
            crate::cpu::hlt();
        }
        /// `sti; hlt; cli`: `sti` takes effect after the next instruction, so an interrupt
        /// pending after the caller's check still ends the `hlt`.
        fn sleep_masked() {
            // SAFETY: the IDT is loaded from the first Rust instruction on; interrupts taken
            // here are handled and return to the `cli`.
            unsafe { core::arch::asm!("sti", "hlt", "cli", options(nomem, nostack)) };
        }
        fn send_test_ipi(cpu: CpuIndex) {
            crate::apic::send_ipi(cpu, IpiKind::Test);
        }
        /// Whether the CPU offers Intel RTM.
        fn has_rtm() -> bool {
            platform().is_some_and(|p| p.cpu.rtm)
        }
    }

    /// The user side of the x86_64 paging ([`hal_common::arch`]): 4-level tables, frames seen
    /// through the physical window, W^X with the execute-disable bit.
    impl hal_common::UserPaging for X86Hal {
        const PAGE_SIZE: u64 = crate::paging::PAGE_SIZE;
        hal_common::user_paging_forwards!(crate);
        /// Nothing to do: x86 instruction fetches see the kernel's stores.
        fn frame_written(_frame: u64, _len: usize) {}
        /// Present and user-accessible, then the execute-disable bit unless the page is
        /// executable and read-only.
        fn map_user(
            root: u64,
            page: u64,
            frame: u64,
            writable: bool,
            executable: bool,
        ) -> Result<(), hal_common::arch::MapUserError> {
            use hal_common::arch::MapUserError;
            crate::paging::map_user(root, page, frame, writable).map_err(|_| MapUserError::Map)?;
            if writable || !executable {
                crate::paging::set_user_no_execute(root, page)
                    .map_err(|_| MapUserError::Protect)?;
            }
            Ok(())
        }
        fn frames_allocated() -> u64 {
            crate::paging::frames_allocated()
        }
    }

    /// The kernel core's view of this HAL. Every operation concerns the calling core (the
    /// kernel passes `cpu` for hosted HALs' logs; here it is always the caller).
    impl kernel::Hal for X86Hal {
        hal_common::kernel_hal_forwards!(crate);
        fn send_ipi(&self, _cpu: kernel::CpuId, target: kernel::CpuId, kind: kernel::IpiKind) {
            crate::apic::send_ipi(target, kind);
        }
        unsafe fn switch_address_space(&self, _cpu: kernel::CpuId, root: kernel::PhysAddr) {
            // SAFETY: the kernel only loads roots of address spaces the image created with
            // `paging::new_address_space`, which share the kernel half.
            unsafe { crate::paging::switch_address_space(root) }
        }
        fn flush_tlb(&self, _cpu: kernel::CpuId, root: kernel::PhysAddr, vaddr: Option<usize>) {
            // Without PCIDs, loading CR3 drops every non-global entry, so only the loaded
            // address space can have stale entries (root 0: the kernel knew none loaded).
            let loaded = crate::paging::current_root();
            match vaddr {
                Some(v) if root == loaded => crate::paging::flush_page(v as u64),
                None if root == loaded || root == 0 => crate::paging::flush_all(),
                _ => {}
            }
        }
        fn prepare_map(
            &self,
            root: kernel::PhysAddr,
            vaddr: usize,
        ) -> Result<(), kernel::MapPrepError> {
            crate::mapprep::prepare_user_map(root, vaddr as u64)
        }
        fn map_page(
            &self,
            root: kernel::PhysAddr,
            vaddr: usize,
            frame: kernel::PhysAddr,
            attrs: kernel::PageAttrs,
            tag: kernel::MapTag,
        ) {
            // The kernel validated the address (page aligned, below USER_TOP) and
            // `prepare_map` made every page table this walk needs in the same critical section,
            // so `map_leaf` allocates nothing and cannot fail: a failure is a bug of this HAL,
            // never the result of user input.
            if let Err(e) = crate::paging::map_leaf(root, vaddr as u64, frame, attrs, tag) {
                crate::mapprep::hal_bug(format_args!(
                    "map_page {vaddr:#x} in {root:#x} failed after prepare_map: {e:?}"
                ));
            }
        }
        fn lookup(&self, root: kernel::PhysAddr, vaddr: usize) -> Option<kernel::Leaf> {
            crate::paging::lookup_leaf(root, vaddr as u64)
        }
        fn unmap_page(&self, cpu: kernel::CpuId, root: kernel::PhysAddr, vaddr: usize) {
            crate::paging::unmap_leaf(cpu, root, vaddr as u64);
        }
        fn irq_line_available(&self, irq: kernel::IrqId) -> bool {
            crate::ioapic::is_available(irq.index() as u32)
        }
        fn mask_irq(&self, _cpu: kernel::CpuId, irq: kernel::IrqId) {
            crate::ioapic::mask(irq.index() as u32);
        }
        fn unmask_irq(&self, _cpu: kernel::CpuId, irq: kernel::IrqId) {
            crate::ioapic::unmask(irq.index() as u32);
        }
        fn route_irq(&self, _cpu: kernel::CpuId, irq: kernel::IrqId, target: kernel::CpuId) {
            // Physical destination: the target core's local APIC id (the bootstrap processor's
            // for a core the HAL does not know, which the kernel never names).
            let apic_id = crate::percpu::PERCPU
                .get(target)
                .map(|p| p.apic_id())
                .filter(|&id| id != u32::MAX)
                .unwrap_or_else(|| crate::percpu::PERCPU[0].apic_id());
            crate::ioapic::route(irq.index() as u32, apic_id);
        }
        fn cycles(&self) -> u64 {
            crate::time::cycles()
        }
    }

    /// Reports a panic on the console (from any core) and exits QEMU with failure. For the
    /// kernel's `#[panic_handler]`.
    pub fn panic_report(info: &core::panic::PanicInfo<'_>) -> ! {
        crate::console::emergency_print(format_args!(
            "\n!!! PANIC on cpu {}: {}\n",
            crate::percpu::cpu_id(),
            info
        ));
        crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
    }
}

/// Names the kernel's main function, called on the bootstrap processor once the HAL is set up:
/// `hal_x86::entry_point!(kernel_main);` with `fn kernel_main(p: &'static hal_x86::Platform) -> !`.
#[macro_export]
macro_rules! entry_point {
    ($main:path) => {
        $crate::__hal_common::entry_point!("hal_x86_kernel_main", $crate::Platform, $main);
    };
}

/// The shared half, for [`entry_point!`]'s expansion in the image's crate.
#[cfg(target_os = "none")]
#[doc(hidden)]
pub use hal_common as __hal_common;
