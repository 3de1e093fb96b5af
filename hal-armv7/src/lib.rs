//! The ARMv7-A hardware abstraction layer: QEMU `-M sabrelite` (i.MX6Q, 4x Cortex-A9 MPCore,
//! the board of the seed paper) and `-M virt -cpu cortex-a15`.
//!
//! # Boot flow
//! QEMU loads the ELF (`-kernel kernel.elf`) and starts core 0 at `_start` in ARM state with
//! the MMU and caches off: in Secure SVC mode on sabrelite, in Non-secure SVC mode on virt (HYP
//! mode with `-M virt,virtualization=on`, which the entry code leaves for SVC). The other cores
//! stay off: on sabrelite the System Reset Controller holds them until [`smp::start_secondaries`]
//! writes their entry point to SRC_GPRn and sets their enable bit in SRC_SCR; on virt they are
//! powered off until a PSCI `CPU_ON` call.
//!
//! [`boot`] sets each core's stacks, zeroes `.bss` (core 0), installs the vector table (VBAR),
//! turns on coherency (SCU and ACTLR.SMP on the A9), invalidates the caches, builds an
//! identity-mapped translation table ([`mmu`]) and enables the MMU and caches: only then may
//! the cores use LDREX/STREX (and so `spin` locks and atomics read-modify-writes) on shared
//! data. Core 0 then sets up the console ([`console`]), the GIC ([`gic`]), the cycle counter
//! and tick timer ([`timer`]) and calls the kernel's main function named with
//! [`entry_point!`], passing the [`Platform`] description. [`pmu`] enables the user-readable
//! cycle counter on request (benchmarks).
//!
//! # For the kernel's `Hal` trait
//! [`ArmHal`] implements `kernel::Hal` (core index, IPIs as SGIs, cycle counter, console) and
//! `hal_common::ArchHal` (clocks, tick timer, sleeping, console, test IPI, QEMU exit: what the
//! images and the boot demo use besides), as `hal_x86::X86Hal` does. [`paging`] makes per-process address spaces (short-descriptor
//! tables with the kernel sections copied in, user pages ASID-tagged; TLB maintenance by ASID
//! and MVA; shoot-downs are SGIs the kernel sends), and [`usermode`] runs user threads: SVC
//! system calls from USR mode, user aborts and undefined instructions handed to the kernel,
//! IRQs from user mode or the idle loop entering the kernel. Device interrupt lines for user
//! drivers are the GIC's shared peripheral interrupts ([`gic`]).
//!
//! # Running
//! `hal-armv7/scripts/qemu-boot-demo.sh [sabrelite|virt] [smp] [cmdline]` builds the `boot-demo`
//! kernel and runs it; by hand:
//! ```text
//! cargo build --release -p hal-armv7 --target armv7a-none-eabi --bin boot-demo
//! qemu-system-arm -M sabrelite -smp 4 -m 1G -kernel target/armv7a-none-eabi/release/boot-demo \
//!     -display none -serial stdio -semihosting -no-reboot
//! qemu-system-arm -M virt -cpu cortex-a15 -smp 4 -m 256M -kernel ... (same flags)
//! ```
//! QEMU exits with the status the kernel passes to [`exit::exit_qemu`] through semihosting:
//! 0 = success, 1 = failure (see [`exit`]).
//!
//! # Host builds
//! Only the pure parts ([`machine`], [`fault`], the device-tree reading of [`bootargs`]) build for the host, so that
//! `cargo test -p hal-armv7 --lib` runs their unit tests; everything else needs
//! `--target armv7a-none-eabi` (it is gated on `target_arch = "arm"` and `target_os = "none"`).
#![no_std]
// The module docs link the bare-metal modules, which a host build does not have.
#![cfg_attr(
    not(all(target_arch = "arm", target_os = "none")),
    allow(rustdoc::broken_intra_doc_links)
)]

pub mod bootargs;
pub mod fault;
pub mod machine;

#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod boot;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod cache;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod console;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod cpu;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod exception;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod exit;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod gic;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod mmu;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod paging;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod percpu;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod pmu;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod psci;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod smp;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod timer;
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub mod usermode;

#[cfg(all(target_arch = "arm", target_os = "none"))]
pub use target::*;

#[cfg(all(target_arch = "arm", target_os = "none"))]
mod target {
    pub(crate) use hal_common::InitOnce;
    /// The operations the images and the boot demo use besides the kernel's `Hal` trait.
    pub use hal_common::{ArchHal, UserPaging};

    use crate::fault::Mode;
    use crate::gic::IpiKind;
    use crate::machine::Machine;
    use crate::percpu::CpuIndex;
    use crate::psci::Conduit;

    /// Everything the HAL found at boot; handed to the kernel's main function.
    #[derive(Debug)]
    pub struct Platform {
        /// Which machine this is (told apart by the CPU part number).
        pub machine: Machine,
        /// Main ID register of the boot core.
        pub midr: u32,
        /// CPSR value at `_start` (mode QEMU entered the kernel in).
        pub entry_psr: u32,
        /// Mode the kernel runs in after the entry code (always SVC).
        pub mode: Mode,
        /// Cortex-A9 MPCore private region base (CBAR), 0 on virt.
        pub periphbase: usize,
        /// GIC distributor base.
        pub gicd: usize,
        /// GIC CPU interface base.
        pub gicc: usize,
        /// Interrupt lines the distributor implements (GICD_TYPER.ITLinesNumber).
        pub gic_lines: u32,
        /// CPU interfaces the GIC implements (GICD_TYPER.CPUNumber + 1): the cores present.
        pub gic_cpus: u32,
        /// Shared peripheral interrupts user drivers may have (`kernel::Hal::irq_line_available`).
        pub gic_available_spis: u32,
        /// Distributor settings that read back wrong at boot (0 on a working machine).
        pub gic_readback_errors: u32,
        /// PSCI conduit (virt), if any.
        pub psci: Option<Conduit>,
        /// PSCI version (major << 16 | minor), if PSCI is present.
        pub psci_version: Option<u32>,
        /// The kernel command line (see `cmdline_source`), or "".
        pub cmdline: &'static str,
        /// Whether semihosting answered (it must, to exit QEMU with a status).
        pub semihosting: bool,
        /// Where the command line came from: QEMU's `-append` through semihosting, or the
        /// device tree a boot loader passed (`/chosen/bootargs`).
        pub cmdline_source: crate::boot::CmdlineSource,
        /// Top of core 0's SVC stack.
        pub stack_top: usize,
    }

    impl Platform {
        /// The value of `key=value` on the command line, if present.
        pub fn cmdline_value(&self, key: &str) -> Option<&'static str> {
            crate::boot::cmdline_value(self.cmdline, key)
        }
    }

    pub(crate) static PLATFORM: InitOnce<Platform> = InitOnce::new();

    /// The platform description, once core 0 has built it (before the kernel's main runs).
    pub fn platform() -> Option<&'static Platform> {
        PLATFORM.get()
    }

    /// The ARMv7-A HAL: the kernel's `Hal` trait and [`hal_common::ArchHal`] (what the images
    /// and the boot demo need besides). All operations are callable from any core.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct ArmHal;

    /// The calling core's interrupt mask (CPSR.I: `cpsid i`, `cpsie i`), for the shared HAL code: the console,
    /// the page-table pool, [`hal_common::ArchHal`].
    impl hal_common::console::IrqState for ArmHal {
        hal_common::irq_state_forwards!(crate);
    }

    /// The operations the images and the boot demo share ([`hal_common::arch`]) on ARMv7-A.
    impl hal_common::ArchHal for ArmHal {
        // Cycles: the A9 global timer (sabrelite) or the generic counter (virt).
        hal_common::arch_hal_forwards!(crate, timer);
        fn timer_start(hz: u32) {
            crate::timer::start_periodic(hz);
        }
        fn timer_stop() {
            crate::timer::stop();
        }
        fn wait_for_interrupt() {
            crate::cpu::wfi();
        }
        /// With IRQs masked, `wfi` still wakes on a pending interrupt; it is taken when IRQs
        /// are unmasked for a moment.
        fn sleep_masked() {
            crate::cpu::wfi();
            crate::cpu::enable_interrupts();
            crate::cpu::disable_interrupts();
        }
        fn send_test_ipi(cpu: CpuIndex) {
            crate::gic::send_sgi(cpu, crate::gic::sgi_of(IpiKind::Test));
        }
        /// Never on ARMv7-A (lock elision falls back to the lock).
        fn has_rtm() -> bool {
            false
        }
    }

    /// The user side of the ARMv7-A paging ([`hal_common::arch`]): short-descriptor tables,
    /// frames identity-mapped.
    impl hal_common::UserPaging for ArmHal {
        const PAGE_SIZE: u64 = crate::paging::PAGE_SIZE as u64;
        hal_common::user_paging_forwards!(crate);
        /// The frame may be executed from: its bytes must reach the point of unification
        /// before the instruction cache can fetch them (`paging::sync_icache` also invalidates
        /// the instruction cache for the new mapping).
        fn frame_written(frame: u64, len: usize) {
            crate::paging::sync_icache(frame, len);
        }
        /// Makes the second-level table if needed, then maps the small page.
        fn map_user(
            root: u64,
            page: u64,
            frame: u64,
            writable: bool,
            _executable: bool,
        ) -> Result<(), hal_common::arch::MapUserError> {
            crate::paging::map_user_alloc(root, page as usize, frame, writable)
                .map_err(|_| hal_common::arch::MapUserError::Map)
        }
        fn frames_allocated() -> u64 {
            crate::paging::frames_allocated() as u64
        }
    }

    /// The kernel core's view of this HAL. Every operation concerns the calling core (the
    /// kernel passes `cpu` for hosted HALs' logs; here it is always the caller).
    impl kernel::Hal for ArmHal {
        // Every release costs a `dmb ish`: the fastpath's endpoint lock and the read side
        // share one (see the trait).
        const MERGE_RELEASES: bool = true;
        hal_common::kernel_hal_forwards!(crate);
        fn send_ipi(&self, _cpu: kernel::CpuId, target: kernel::CpuId, kind: kernel::IpiKind) {
            // `send_sgi` starts with a `dsb`: the page-table stores and the kernel state the
            // IPI announces are complete before the target can take it.
            crate::gic::send_sgi(target, crate::gic::sgi_of(kind));
        }
        // In line in the kernel's IPC fastpath (a call and its frame per switch).
        #[inline(always)]
        unsafe fn switch_address_space(&self, _cpu: kernel::CpuId, root: kernel::PhysAddr) {
            // The entries of the address space it leaves stay, tagged with its ASID (see
            // `paging::switch_address_space`).
            // SAFETY: the kernel only loads roots of address spaces the image created with
            // `paging::new_address_space`, which map the kernel sections.
            unsafe { crate::paging::switch_address_space(root) }
        }
        fn flush_tlb(&self, _cpu: kernel::CpuId, root: kernel::PhysAddr, vaddr: Option<usize>) {
            // Entries are tagged with the ASID, so any root can be flushed whether loaded or
            // not (root 0: everything).
            crate::paging::flush_local(root, vaddr);
        }
        fn prepare_map(
            &self,
            root: kernel::PhysAddr,
            vaddr: usize,
        ) -> Result<(), kernel::MapPrepError> {
            crate::paging::prepare_user_map(root, vaddr)
        }
        fn map_page(
            &self,
            root: kernel::PhysAddr,
            vaddr: usize,
            frame: kernel::PhysAddr,
            attrs: kernel::PageAttrs,
            tag: kernel::MapTag,
        ) {
            // `prepare_map` made the second-level table in the same critical section. Besides
            // the store, `map_leaf` cleans the entry to the point of unification and waits
            // (`dsb ish`): ARMv7 has no transactions, so cache maintenance inside the critical
            // section is allowed here, and the A9's table walker needs it.
            if crate::paging::map_leaf(root, vaddr, frame, attrs, tag).is_err() {
                panic!("map_page {vaddr:#x} in {root:#x} failed after prepare_map (HAL bug)");
            }
        }
        fn lookup(&self, root: kernel::PhysAddr, vaddr: usize) -> Option<kernel::Leaf> {
            crate::paging::lookup_leaf(root, vaddr)
        }
        fn unmap_page(&self, cpu: kernel::CpuId, root: kernel::PhysAddr, vaddr: usize) {
            crate::paging::unmap_leaf(cpu, root, vaddr);
        }
        fn irq_line_available(&self, irq: kernel::IrqId) -> bool {
            crate::gic::spi_available(irq.index() as u32)
        }
        fn mask_irq(&self, _cpu: kernel::CpuId, irq: kernel::IrqId) {
            crate::gic::mask_spi(irq.index() as u32);
        }
        fn unmask_irq(&self, _cpu: kernel::CpuId, irq: kernel::IrqId) {
            crate::gic::unmask_spi(irq.index() as u32);
        }
        fn route_irq(&self, _cpu: kernel::CpuId, irq: kernel::IrqId, target: kernel::CpuId) {
            crate::gic::route_spi(irq.index() as u32, target);
        }
        fn cycles(&self) -> u64 {
            crate::timer::cycles()
        }
    }

    /// Reports a panic on the console (from any core) and exits QEMU with failure. For the
    /// kernel's `#[panic_handler]`.
    pub fn panic_report(info: &core::panic::PanicInfo<'_>) -> ! {
        crate::cpu::disable_interrupts();
        crate::console::emergency_print(format_args!(
            "\n!!! PANIC on cpu {}: {}\n",
            crate::percpu::cpu_id(),
            info
        ));
        crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
    }
}

/// Names the kernel's main function, called on core 0 once the HAL is set up:
/// `hal_armv7::entry_point!(kernel_main);` with `fn kernel_main(p: &'static hal_armv7::Platform) -> !`.
#[macro_export]
macro_rules! entry_point {
    ($main:path) => {
        $crate::__hal_common::entry_point!("hal_armv7_kernel_main", $crate::Platform, $main);
    };
}

/// The shared half, for [`entry_point!`]'s expansion in the image's crate.
#[cfg(target_os = "none")]
#[doc(hidden)]
pub use hal_common as __hal_common;
