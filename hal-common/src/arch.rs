//! The operations every HAL offers its kernel images and boot demos beyond the kernel's `Hal`
//! trait: core identity and counters, clocks, the tick timer, sleeping, the console, the test
//! IPI and the way out of QEMU ([`ArchHal`]), and the user side of its paging: frames, address
//! spaces, user mappings and a thread's first registers ([`UserPaging`]). Each HAL implements
//! both once on its HAL type (`hal_x86::X86Hal`, `hal_armv7::ArmHal`), the operations every
//! HAL forwards to the same modules of its crate through
//! [`irq_state_forwards!`](crate::irq_state_forwards),
//! [`arch_hal_forwards!`](crate::arch_hal_forwards),
//! [`user_paging_forwards!`](crate::user_paging_forwards) and
//! [`kernel_hal_forwards!`](crate::kernel_hal_forwards); the boot demos
//! ([`demo`](crate::demo)) and the images' boot, system builder, ELF loader, debug calls and
//! self-tests are written once against them.

use core::fmt;

use kernel::ThreadId;

use crate::console::IrqState;
use crate::percpu::{CoreStats, CpuIndex};

/// What only the architecture knows of the calling core (its interrupt mask: [`IrqState`]), the
/// clocks, the console and the machine's exit. Every operation is callable from any core.
pub trait ArchHal: IrqState {
    /// Index of the calling core (0 = boot core).
    fn cpu_id() -> CpuIndex;
    /// Cores online.
    fn online_count() -> usize;
    /// Cores the HAL knows (started or tried), once the secondaries were started.
    fn cpu_count() -> usize;
    /// Core `cpu`'s status and counters, `None` beyond the cores the HAL is built for.
    fn core_stats(cpu: CpuIndex) -> Option<&'static CoreStats>;
    /// The kernel's cycle counter.
    fn cycles() -> u64;
    /// Its frequency in Hz.
    fn cycles_hz() -> u64;
    /// Converts a difference of [`cycles`](Self::cycles) to nanoseconds.
    fn cycles_to_ns(delta: u64) -> u64;
    /// Nanoseconds since the kernel was entered.
    fn since_boot_ns() -> u64;
    /// Starts periodic timer interrupts at `hz` on the calling core.
    fn timer_start(hz: u32);
    /// Stops the calling core's timer.
    fn timer_stop();
    /// Sleeps until an interrupt (`hlt`, `wfi`).
    fn wait_for_interrupt();
    /// Called with the calling core's interrupts masked: sleeps until an interrupt is pending,
    /// lets it be taken and returns with interrupts masked again. An interrupt that arrives
    /// after the caller's last check still ends the sleep.
    fn sleep_masked();
    /// Stops the calling core for good.
    fn halt_forever() -> !;
    /// Writes a string to the console.
    fn console_write(s: &str);
    /// Prints formatted text to the console (whole calls never interleave).
    fn print(args: fmt::Arguments<'_>);
    /// Sends the test IPI to core `cpu` (it only counts it, and wakes the core).
    fn send_test_ipi(cpu: CpuIndex);
    /// Whether the CPU offers hardware transactional memory (Intel RTM).
    fn has_rtm() -> bool;
    /// Stops the machine: exits QEMU with the success or failure status (halts on hardware).
    fn exit(success: bool) -> !;
    /// The last user exception of thread `t`, if any (the HAL's
    /// [`UserMode::fault_record`](crate::usermode::UserMode::fault_record)).
    fn fault_record(t: ThreadId) -> Option<crate::usermode::FaultInfo>;

    /// Prints a line (`args` without the newline).
    fn println(args: fmt::Arguments<'_>) {
        Self::print(format_args!("{args}\n"));
    }
    /// Whether core `cpu` is up.
    fn is_online(cpu: CpuIndex) -> bool {
        Self::core_stats(cpu).is_some_and(|s| s.is_online())
    }
    /// IPIs core `cpu` received.
    fn ipis(cpu: CpuIndex) -> u64 {
        Self::core_stats(cpu).map_or(0, |s| s.ipis())
    }
    /// Timer interrupts the calling core has taken.
    fn timer_ticks() -> u64 {
        Self::core_stats(Self::cpu_id()).map_or(0, |s| s.ticks())
    }
}

/// The user side of the HAL's paging, for the images' system builder and ELF loader: frames,
/// address spaces and user page mappings.
pub trait UserPaging {
    /// Size of a page and of a frame.
    const PAGE_SIZE: u64;
    /// A fresh, zeroed frame, or `None` when out of memory.
    fn alloc_frame() -> Option<u64>;
    /// Where the kernel sees the first byte of frame `frame`.
    fn frame_ptr(frame: u64) -> *mut u8;
    /// Called after the kernel wrote `len` bytes of user code or data into the fresh frame
    /// `frame`, before it is mapped: where instruction fetches need it, makes the bytes visible
    /// to them.
    fn frame_written(frame: u64, len: usize);
    /// Maps `frame` at the user page `page` of the address space `root`, writable if
    /// `writable`, executable only if `executable` and not `writable` (W^X) where the page
    /// tables can say so; makes the page tables the walk needs.
    fn map_user(
        root: u64,
        page: u64,
        frame: u64,
        writable: bool,
        executable: bool,
    ) -> Result<(), MapUserError>;
    /// A new, empty user address space (the root of its page tables), or `None` when out of
    /// memory.
    fn new_address_space() -> Option<u64>;
    /// Hands over all RAM that nothing uses yet: writes up to `out.len()` page-aligned ranges
    /// `(start, end)` and returns how many; [`alloc_frame`](Self::alloc_frame) finds nothing
    /// afterwards.
    fn take_free_ram(out: &mut [(u64, u64)]) -> usize;
    /// Physical frames allocated so far.
    fn frames_allocated() -> u64;
    /// Sets the registers thread `t` starts with in user mode: `pc`, `sp` and the first three
    /// argument registers.
    ///
    /// # Safety
    /// `t` must not have run; its entry and the stack below `sp` must be mapped
    /// user-accessible in its address space.
    unsafe fn set_initial_context(t: ThreadId, pc: usize, sp: usize, args: [usize; 3]);
}

/// Why [`UserPaging::map_user`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapUserError {
    /// The page could not be mapped (no frame for a page table, or not a page-aligned user
    /// address).
    Map,
    /// The page was mapped but its protection could not be set.
    Protect,
}

/// Defines a kernel's main function under the symbol `$symbol` that the HAL's entry code calls
/// with its `&'static $platform`: the body of each HAL's `entry_point!`, which names its
/// symbol and platform type.
#[macro_export]
macro_rules! entry_point {
    ($symbol:literal, $platform:ty, $main:path) => {
        #[export_name = $symbol]
        fn __hal_kernel_main(platform: &'static $platform) -> ! {
            let main: fn(&'static $platform) -> ! = $main;
            main(platform)
        }
    };
}

/// The attributes of a page the image loader maps: writable and never executable, or read-only
/// and executable.
pub fn loader_attrs(writable: bool) -> kernel::PageAttrs {
    if writable {
        kernel::PageAttrs::WRITE
    } else {
        kernel::PageAttrs::EXEC
    }
}

/// The calling core's interrupt mask ([`IrqState`]) as every HAL has it, in its `cpu` module
/// (`interrupts_enabled`, `disable_interrupts`, `enable_interrupts`), written once: invoked as
/// `irq_state_forwards!(crate)` inside a HAL's `impl IrqState`.
#[macro_export]
macro_rules! irq_state_forwards {
    ($hal:tt) => {
        fn interrupts_enabled() -> bool {
            $hal::cpu::interrupts_enabled()
        }
        fn disable_interrupts() {
            $hal::cpu::disable_interrupts();
        }
        fn enable_interrupts() {
            $hal::cpu::enable_interrupts();
        }
    };
}

/// The operations of [`ArchHal`] that every HAL forwards to the same modules of its own crate,
/// written once: invoked as `arch_hal_forwards!(crate, clock)` inside a HAL's `impl ArchHal`,
/// it defines the core identity and counters (`percpu::{cpu_id, PERCPU}`,
/// `smp::{online_count, cpu_count}`), the cycle counter (`clock::{cycles, cycles_hz,
/// cycles_to_ns, since_boot_ns}`, `clock` naming the HAL's clock module), `halt_forever`
/// (`cpu`), the console (`console::{write_str, print}`), the exit (`exit::{exit_qemu,
/// ExitCode}`) and the fault record (`usermode::USER`). The HAL writes the rest: its tick
/// timer, sleeping, test IPI and RTM support.
#[macro_export]
macro_rules! arch_hal_forwards {
    ($hal:tt, $clock:ident) => {
        #[inline]
        fn cpu_id() -> $crate::percpu::CpuIndex {
            $hal::percpu::cpu_id()
        }
        #[inline]
        fn cycles() -> u64 {
            $hal::$clock::cycles()
        }
        fn cycles_hz() -> u64 {
            $hal::$clock::cycles_hz()
        }
        fn cycles_to_ns(delta: u64) -> u64 {
            $hal::$clock::cycles_to_ns(delta)
        }
        fn since_boot_ns() -> u64 {
            $hal::$clock::since_boot_ns()
        }
        fn online_count() -> usize {
            $hal::smp::online_count()
        }
        fn cpu_count() -> usize {
            $hal::smp::cpu_count()
        }
        fn core_stats(cpu: $crate::percpu::CpuIndex) -> Option<&'static $crate::percpu::CoreStats> {
            $hal::percpu::PERCPU.get(cpu).map(|p| &**p)
        }
        fn halt_forever() -> ! {
            $hal::cpu::halt_forever()
        }
        fn console_write(s: &str) {
            $hal::console::write_str(s);
        }
        fn print(args: core::fmt::Arguments<'_>) {
            $hal::console::print(args);
        }
        /// Exits QEMU (see the HAL's `exit` module).
        fn exit(success: bool) -> ! {
            $hal::exit::exit_qemu(if success {
                $hal::exit::ExitCode::Success
            } else {
                $hal::exit::ExitCode::Failure
            })
        }
        fn fault_record(t: kernel::ThreadId) -> Option<$crate::usermode::FaultInfo> {
            $hal::usermode::USER.fault_record(t)
        }
    };
}

/// The operations of [`UserPaging`] that every HAL forwards to its `paging` and `usermode`
/// modules, written once: invoked as `user_paging_forwards!(crate)` inside a HAL's
/// `impl UserPaging`, it defines `alloc_frame`,
/// `frame_ptr` (`paging::phys_to_virt`), `new_address_space`, `take_free_ram` and
/// `set_initial_context` (`usermode::USER`). The HAL writes the page size, what a written
/// frame needs, `map_user` and `frames_allocated`.
#[macro_export]
macro_rules! user_paging_forwards {
    ($hal:tt) => {
        fn alloc_frame() -> Option<u64> {
            $hal::paging::alloc_frame()
        }
        fn frame_ptr(frame: u64) -> *mut u8 {
            $hal::paging::phys_to_virt(frame)
        }
        fn new_address_space() -> Option<u64> {
            $hal::paging::new_address_space()
        }
        fn take_free_ram(out: &mut [(u64, u64)]) -> usize {
            $hal::paging::take_free_ram(out)
        }
        unsafe fn set_initial_context(t: kernel::ThreadId, pc: usize, sp: usize, args: [usize; 3]) {
            // SAFETY: forwarded contract (callers pass a stack pointer aligned as the
            // architecture's calling convention wants at a function's entry).
            unsafe { $hal::usermode::USER.set_initial_context(t, pc, sp, args) }
        }
    };
}

/// The operations of the kernel's `Hal` trait that every HAL forwards to the same modules of
/// its own crate, written once: invoked as `kernel_hal_forwards!(crate)` inside a HAL's
/// `impl kernel::Hal`, it defines
/// `cpu_id`, `cpu_count` (cores online), `sweep`, `reclaim_tables`, `table_frames` (`paging`),
/// `set_entry` (`usermode::USER`) and `console_write`. The HAL writes the IPIs, the address
/// space switch, the TLB flushes, the page-table writes, the interrupt lines and the cycle
/// counter.
#[macro_export]
macro_rules! kernel_hal_forwards {
    ($hal:tt) => {
        fn cpu_id(&self) -> kernel::CpuId {
            $hal::percpu::cpu_id()
        }
        fn cpu_count(&self) -> usize {
            $hal::smp::online_count()
        }
        fn sweep(
            &self,
            cpu: kernel::CpuId,
            root: kernel::PhysAddr,
            f: &mut dyn FnMut(&kernel::Leaf) -> kernel::SweepAction,
        ) -> usize {
            $hal::paging::sweep(cpu, root, f)
        }
        fn reclaim_tables(&self, cpu: kernel::CpuId) {
            $hal::paging::reclaim_tables(cpu);
        }
        fn table_frames(&self) -> (usize, usize) {
            $hal::paging::table_frames()
        }
        fn set_entry(&self, thread: kernel::ThreadId, pc: usize, sp: usize, arg: usize) {
            // SAFETY: the kernel calls this in its critical section for a thread that is
            // inactive and no core's current thread, as `set_initial_context` requires.
            unsafe { $hal::usermode::USER.set_initial_context(thread, pc, sp, [arg, 0, 0]) }
        }
        fn console_write(&self, s: &str) {
            $hal::console::write_str(s);
        }
    };
}
