//! The local APIC in xAPIC mode: enable, EOI, timer, IPIs.
//!
//! xAPIC rather than x2APIC because QEMU 7.2's TCG does not offer x2APIC. The registers are
//! memory-mapped at the address in `IA32_APIC_BASE` (0xFEE0_0000 on every PC); the boot page
//! tables map that range uncached (see [`paging`](crate::paging)), as device registers need.
//! Every core sees its own APIC at the same physical address.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::cpu::{rdmsr, wrmsr};
use crate::interrupts::{IPI_VECTORS, IPI_VECTOR_BASE, SPURIOUS_VECTOR, TIMER_VECTOR};
use crate::paging::phys_to_virt;
use crate::percpu::{CpuIndex, PERCPU};

const IA32_APIC_BASE: u32 = 0x1B;

const REG_ID: usize = 0x20;
const REG_TPR: usize = 0x80;
const REG_EOI: usize = 0xB0;
const REG_SVR: usize = 0xF0;
const REG_ESR: usize = 0x280;
const REG_ICR_LOW: usize = 0x300;
const REG_ICR_HIGH: usize = 0x310;
const REG_LVT_TIMER: usize = 0x320;
const REG_TIMER_INITIAL: usize = 0x380;
const REG_TIMER_CURRENT: usize = 0x390;
const REG_TIMER_DIVIDE: usize = 0x3E0;

const LVT_MASKED: u32 = 1 << 16;
const LVT_PERIODIC: u32 = 1 << 17;
const ICR_PENDING: u32 = 1 << 12;
const ICR_ASSERT: u32 = 1 << 14;

/// Divide configuration value for "divide by 16" (the timer frequency the HAL calibrates).
const DIVIDE_BY_16: u32 = 0b0011;

static APIC_PHYS: AtomicU64 = AtomicU64::new(0xFEE0_0000);

fn reg(offset: usize) -> *mut u32 {
    // SAFETY: pointer arithmetic within the 4 KiB register page, mapped in the physical window.
    unsafe { phys_to_virt(APIC_PHYS.load(Ordering::Relaxed)).add(offset) as *mut u32 }
}

fn read(offset: usize) -> u32 {
    // SAFETY: an aligned xAPIC register of this core's APIC, mapped uncached.
    unsafe { reg(offset).read_volatile() }
}

fn write(offset: usize, value: u32) {
    // SAFETY: an aligned xAPIC register of this core's APIC, mapped uncached; the callers in
    // this module only write values valid for the register.
    unsafe { reg(offset).write_volatile(value) }
}

/// Enables the calling core's local APIC (software enable, spurious vector, accept all
/// priorities) with its timer masked. Returns its APIC id.
pub(crate) fn init_local() -> u32 {
    // SAFETY: IA32_APIC_BASE exists on every x86_64 CPU (all have an APIC); setting the global
    // enable bit (11) keeps the base address unchanged.
    let base = unsafe {
        let v = rdmsr(IA32_APIC_BASE);
        wrmsr(IA32_APIC_BASE, v | (1 << 11));
        v & 0x000F_FFFF_FFFF_F000
    };
    APIC_PHYS.store(base, Ordering::Relaxed);
    write(REG_TPR, 0);
    write(REG_LVT_TIMER, LVT_MASKED | u32::from(TIMER_VECTOR));
    write(REG_SVR, (1 << 8) | u32::from(SPURIOUS_VECTOR));
    write(REG_ESR, 0);
    write(REG_ESR, 0);
    id()
}

/// Physical address of the local APIC registers.
pub fn base_address() -> u64 {
    APIC_PHYS.load(Ordering::Relaxed)
}

/// The calling core's local APIC id.
pub fn id() -> u32 {
    read(REG_ID) >> 24
}

/// Signals end of interrupt to the calling core's APIC.
pub fn eoi() {
    write(REG_EOI, 0);
}

/// Kinds of inter-processor interrupts: the kernel's own, each on its own vector here.
pub use kernel::IpiKind;

/// The vector `kind` is delivered on.
pub const fn ipi_vector(kind: IpiKind) -> u8 {
    IPI_VECTOR_BASE + kind as u8
}

/// The kind delivered on `vector`, if any.
pub fn ipi_of_vector(vector: u64) -> Option<IpiKind> {
    let i = vector.checked_sub(u64::from(IPI_VECTOR_BASE))?;
    IpiKind::ALL.get(usize::try_from(i).ok()?).copied()
}

const _: () = assert!(IpiKind::ALL.len() == IPI_VECTORS as usize);

fn wait_icr_idle() {
    let mut spins = 0u32;
    while read(REG_ICR_LOW) & ICR_PENDING != 0 && spins < 1_000_000 {
        spins += 1;
        core::hint::spin_loop();
    }
}

/// Sends a raw ICR command to the APIC with id `apic_id`.
///
/// # Safety
/// INIT and STARTUP commands reset or start cores: only the SMP bring-up may send them.
pub(crate) unsafe fn send_icr(apic_id: u32, low: u32) {
    crate::cpu::without_interrupts(|| {
        wait_icr_idle();
        write(REG_ICR_HIGH, apic_id << 24);
        write(REG_ICR_LOW, low);
        wait_icr_idle();
    });
}

/// Sends an IPI of `kind` to core `cpu` (the `Hal` IPI operation).
///
/// # Panics
/// If `cpu` is not a core the HAL knows.
pub fn send_ipi(cpu: CpuIndex, kind: IpiKind) {
    let apic_id = PERCPU[cpu].apic_id();
    assert!(apic_id != u32::MAX, "send_ipi: cpu {cpu} has no APIC id");
    // SAFETY: a fixed-delivery interrupt on one of the HAL's IPI vectors only runs the handler.
    unsafe { send_icr(apic_id, ICR_ASSERT | u32::from(ipi_vector(kind))) }
}

/// Sends an INIT IPI.
pub(crate) fn send_init(apic_id: u32) {
    // SAFETY: bring-up sends INIT only to APs that have not started yet.
    unsafe { send_icr(apic_id, ICR_ASSERT | 0x500) }
}

/// Sends a STARTUP IPI: the target starts in real mode at `page << 12`.
pub(crate) fn send_startup(apic_id: u32, page: u8) {
    // SAFETY: bring-up sends STARTUP only to APs waiting for it, with the trampoline in place.
    unsafe { send_icr(apic_id, ICR_ASSERT | 0x600 | u32::from(page)) }
}

/// Starts the timer counting down from `u32::MAX`, one-shot, masked (for calibration).
pub(crate) fn timer_start_calibration() {
    write(REG_TIMER_DIVIDE, DIVIDE_BY_16);
    write(REG_LVT_TIMER, LVT_MASKED | u32::from(TIMER_VECTOR));
    write(REG_TIMER_INITIAL, u32::MAX);
}

/// The timer's current count.
pub(crate) fn timer_current() -> u32 {
    read(REG_TIMER_CURRENT)
}

/// Stops the calling core's timer.
pub fn timer_stop() {
    write(REG_LVT_TIMER, LVT_MASKED | u32::from(TIMER_VECTOR));
    write(REG_TIMER_INITIAL, 0);
}

/// Starts periodic timer interrupts on the calling core, every `count` timer ticks (at the
/// calibrated divide-by-16 frequency, see [`time::apic_timer_hz`](crate::time::apic_timer_hz)).
pub fn timer_start_periodic(count: u32) {
    write(REG_TIMER_DIVIDE, DIVIDE_BY_16);
    write(REG_LVT_TIMER, LVT_PERIODIC | u32::from(TIMER_VECTOR));
    write(REG_TIMER_INITIAL, count.max(1));
}
