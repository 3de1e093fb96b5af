//! The ARM Generic Interrupt Controller: the Cortex-A9 MPCore's GIC (v1, at PERIPHBASE + 0x1000
//! and + 0x100) on sabrelite, GICv2 at 0x0800_0000 / 0x0801_0000 on virt.
//!
//! Core 0 sets up the distributor ([`init_distributor`]); every core sets up its own banked
//! part (SGIs and PPIs 0..31) and CPU interface ([`init_cpu`]). On sabrelite we run in the
//! Secure state: all interrupts stay in group 0 and, with GICC_CTLR.FIQEn clear, arrive as IRQ.
//! On virt (no Security Extensions in QEMU's GIC without `secure=on`) there is one group.
//!
//! # Inter-processor interrupts
//! IPIs are SGIs: [`send_sgi`] writes GICD_SGIR with the target core's bit. The `dsb` before
//! that write makes the sender's earlier stores (the message the IPI announces) complete
//! before the interrupt can be observed; the receiver's handler reads GICC_IAR, which orders
//! its later reads after the acknowledge (a Device read followed by `dmb` in the handler).
//!
//! # Device interrupts (shared peripheral interrupts)
//! The kernel hands SPIs to user drivers, numbered from 0 (SPI `n` is interrupt ID `32 + n`).
//! At boot every SPI is disabled, level-sensitive (device lines: the i.MX6 peripherals and
//! virtio-mmio are level), at the default priority and targeted at core 0. [`route_spi`]
//! writes the SPI's GICD_ITARGETSR byte (the target core's CPU interface mask, recorded by
//! each core at its [`init_cpu`] from the banked GICD_ITARGETSR0, which reads as the calling
//! core's own mask) and enables it; [`mask_spi`]/[`unmask_spi`] write GICD_ICENABLER /
//! GICD_ISENABLER. These are write-one-to-set/clear registers and byte-wide target fields, so
//! cores never race on a read-modify-write and no lock is needed.
//!
//! When an SPI is taken, the IRQ path (`usermode::take_interrupt`) disables it
//! ([`mask_spi`]) *before* it writes GICC_EOIR ([`end_of_interrupt`]), then enters the kernel.
//! Why the mask is in effect before the EOI: the GIC is mapped as Shareable Device memory
//! (TEX=000 C=0 B=1, see [`machine`](crate::machine)), whose accesses the core issues in
//! program order and does not merge, but ARMv7 only promises their arrival order for accesses
//! to the same peripheral, an IMPLEMENTATION DEFINED extent, and the distributor and CPU
//! interface are separate register blocks (64 KiB apart on virt). [`end_of_interrupt`]
//! therefore executes a `dsb` before the EOIR write: the GICD_ICENABLER write has completed
//! at the distributor before the EOI can deactivate the interrupt, so a level-sensitive line
//! the device still asserts becomes pending but is not forwarded again. The same `dsb`
//! completes the mask before any later instruction, so the kernel's notification signal
//! (normal memory stores after it in program order) and the driver's acknowledgement that
//! unmasks the line (on any core, after it saw the signal) come after the mask took effect.
//!
//! # Acknowledge and end of interrupt
//! Every interrupt taken must be acknowledged (GICC_IAR) and completed (GICC_EOIR): otherwise
//! it stays active, the CPU interface's running priority stays up and `wfi` never sleeps
//! (QEMU: a secondary that leaves an SGI unacknowledged spins in `wfi`).

use core::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

use crate::cpu::dsb;
use crate::percpu::{CpuIndex, MAX_CPUS};

register_bitfields![u32,
    /// Distributor type register.
    GICD_TYPER [
        /// Interrupt lines / 32 - 1.
        IT_LINES_NUMBER OFFSET(0) NUMBITS(5) [],
        /// CPU interfaces - 1.
        CPU_NUMBER OFFSET(5) NUMBITS(3) [],
        /// Security Extensions implemented.
        SECURITY_EXTN OFFSET(10) NUMBITS(1) []
    ],
    /// Software generated interrupt register.
    GICD_SGIR [
        /// SGI number.
        SGIINTID OFFSET(0) NUMBITS(4) [],
        /// Secure writes only: 0 = send as group 0, 1 = only if group 1.
        NSATT OFFSET(15) NUMBITS(1) [],
        /// One bit per target CPU interface.
        CPU_TARGET_LIST OFFSET(16) NUMBITS(8) [],
        /// 0 = to the list, 1 = to all others, 2 = to self.
        TARGET_LIST_FILTER OFFSET(24) NUMBITS(2) []
    ],
    /// Interrupt acknowledge register.
    GICC_IAR [
        /// Interrupt ID (1023 = spurious).
        INTERRUPT_ID OFFSET(0) NUMBITS(10) [],
        /// For SGIs: the requesting core.
        CPUID OFFSET(10) NUMBITS(3) []
    ]
];

register_structs! {
    /// GIC distributor (GIC architecture spec v2, 4.3).
    pub GicdRegs {
        (0x000 => ctlr: ReadWrite<u32>),
        (0x004 => typer: ReadOnly<u32, GICD_TYPER::Register>),
        (0x008 => iidr: ReadOnly<u32>),
        (0x00C => _reserved0),
        (0x080 => igroupr: [ReadWrite<u32>; 32]),
        (0x100 => isenabler: [ReadWrite<u32>; 32]),
        (0x180 => icenabler: [ReadWrite<u32>; 32]),
        (0x200 => ispendr: [ReadWrite<u32>; 32]),
        (0x280 => icpendr: [ReadWrite<u32>; 32]),
        (0x300 => isactiver: [ReadWrite<u32>; 32]),
        (0x380 => icactiver: [ReadWrite<u32>; 32]),
        (0x400 => ipriorityr: [ReadWrite<u32>; 255]),
        (0x7FC => _reserved1),
        (0x800 => itargetsr: [ReadWrite<u32>; 255]),
        (0xBFC => _reserved2),
        (0xC00 => icfgr: [ReadWrite<u32>; 64]),
        (0xD00 => _reserved3),
        (0xF00 => sgir: WriteOnly<u32, GICD_SGIR::Register>),
        (0xF04 => _reserved4),
        (0x1000 => @END),
    }
}

register_structs! {
    /// GIC CPU interface (GIC architecture spec v2, 4.4); the A9's is 256 bytes.
    pub GiccRegs {
        (0x00 => ctlr: ReadWrite<u32>),
        (0x04 => pmr: ReadWrite<u32>),
        (0x08 => bpr: ReadWrite<u32>),
        (0x0C => iar: ReadOnly<u32, GICC_IAR::Register>),
        (0x10 => eoir: WriteOnly<u32>),
        (0x14 => rpr: ReadOnly<u32>),
        (0x18 => hppir: ReadOnly<u32>),
        (0x1C => _reserved0),
        (0x100 => @END),
    }
}

/// The IPI kinds: the kernel's own, each on its own SGI here.
pub use kernel::IpiKind;

/// The SGI number (interrupt ID) `kind` is delivered on.
pub const fn sgi_of(kind: IpiKind) -> u32 {
    kind as u32
}

/// The kind delivered on SGI `id`, if any.
pub fn ipi_of_sgi(id: u32) -> Option<IpiKind> {
    IpiKind::ALL.get(id as usize).copied()
}

/// Priority given to every interrupt the HAL enables (lower is more urgent).
const DEFAULT_PRIORITY: u32 = 0xA0;
/// Priority mask: let everything more urgent than 0xF0 through.
const PRIORITY_MASK: u32 = 0xF0;
/// GICC_IAR value for "no pending interrupt".
pub const SPURIOUS: u32 = 1023;

static GICD: AtomicUsize = AtomicUsize::new(0);
static GICC: AtomicUsize = AtomicUsize::new(0);

/// Device interrupt lines (SPIs) user space may have: `0..DEVICE_LINES`.
pub const DEVICE_LINES: usize = kernel::config::DEVICE_IRQS;
/// CPU interfaces the GIC implements.
static CPUS: AtomicU32 = AtomicU32::new(0);
/// SPIs the distributor implements (all of them, also those past [`DEVICE_LINES`]).
static SPIS: AtomicU32 = AtomicU32::new(0);
/// SPIs user space may have, bit per line; written once by [`init_distributor`], then read
/// lock-free (the kernel asks inside its critical section).
static AVAILABLE: [AtomicU32; 4] = [const { AtomicU32::new(0) }; 4];
/// Each core's CPU interface mask (GICD_ITARGETSR value that targets it), from [`init_cpu`].
static CPU_MASK: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(0) }; MAX_CPUS];
/// Interrupts delivered per SPI (tests and diagnostics).
static DELIVERED: hal_common::irq::LineCounts<DEVICE_LINES> = hal_common::irq::LineCounts::new();

fn gicd() -> &'static GicdRegs {
    let base = GICD.load(Ordering::Relaxed);
    debug_assert!(base != 0, "GIC used before init");
    // SAFETY: set by `init_distributor` to the machine's distributor, identity mapped as
    // Device memory; the register block is only accessed through volatile cells.
    unsafe { &*(base as *const GicdRegs) }
}

fn gicc() -> &'static GiccRegs {
    let base = GICC.load(Ordering::Relaxed);
    debug_assert!(base != 0, "GIC used before init");
    // SAFETY: as for `gicd`; the CPU interface is banked per core at the same address.
    unsafe { &*(base as *const GiccRegs) }
}

/// What the distributor reports about itself.
#[derive(Clone, Copy, Debug)]
pub struct GicInfo {
    /// Interrupt IDs implemented (32 * (ITLinesNumber + 1)).
    pub lines: u32,
    /// CPU interfaces (cores) implemented.
    pub cpus: u32,
    /// Security Extensions implemented.
    pub security: bool,
    /// GICD_IIDR.
    pub iidr: u32,
    /// SPIs user drivers may have (below [`DEVICE_LINES`], minus the kernel's own).
    pub available_spis: u32,
    /// Distributor settings that read back differently from what was written (0 on a
    /// working machine; the boot log reports them).
    pub readback_errors: u32,
}

/// Sets up the distributor at `gicd` and records the CPU interface address `gicc`: shared
/// interrupts (SPIs) disabled, level-sensitive, at the default priority, routed to core 0; the
/// SPIs in `kernel_spis` (the kernel's own devices) are never offered to user space. Reads
/// the settings back and counts mismatches. Core 0, once, after its MMU is on.
pub fn init_distributor(gicd_base: usize, gicc_base: usize, kernel_spis: &[u32]) -> GicInfo {
    GICD.store(gicd_base, Ordering::Relaxed);
    GICC.store(gicc_base, Ordering::Relaxed);
    let d = gicd();
    d.ctlr.set(0);
    let lines = 32 * (d.typer.read(GICD_TYPER::IT_LINES_NUMBER) + 1);
    let words = (lines / 32) as usize;
    for i in 1..words.min(32) {
        d.icenabler[i].set(u32::MAX);
        d.icpendr[i].set(u32::MAX);
    }
    let prio = DEFAULT_PRIORITY * 0x0101_0101;
    for i in 8..((lines / 4) as usize).min(255) {
        d.ipriorityr[i].set(prio);
        d.itargetsr[i].set(0x0101_0101);
    }
    // Level-sensitive: clear the upper bit of each SPI's two-bit field (the lower one is the
    // GICv1 N-N/1-N model bit, read-only or reserved on the A9 and GICv2: left alone).
    for i in 2..((lines / 16) as usize).min(64) {
        d.icfgr[i].set(d.icfgr[i].get() & 0x5555_5555);
    }
    // With one CPU interface GICD_ITARGETSR is read-as-zero (targets do not matter then).
    let cpus = d.typer.read(GICD_TYPER::CPU_NUMBER) + 1;
    CPUS.store(cpus, Ordering::Relaxed);
    let mut errors = 0;
    for i in 1..words.min(32) {
        errors += u32::from(d.isenabler[i].get() != 0);
    }
    for i in 8..((lines / 4) as usize).min(255) {
        errors += u32::from(d.ipriorityr[i].get() != prio);
        errors += u32::from(cpus > 1 && d.itargetsr[i].get() != 0x0101_0101);
    }
    for i in 2..((lines / 16) as usize).min(64) {
        errors += u32::from(d.icfgr[i].get() & 0xAAAA_AAAA != 0);
    }
    let spis = lines.saturating_sub(32);
    SPIS.store(spis, Ordering::Relaxed);
    let mut available = 0u128;
    for spi in 0..spis.min(DEVICE_LINES as u32) {
        if !kernel_spis.contains(&spi) {
            available |= 1 << spi;
        }
    }
    for (i, w) in AVAILABLE.iter().enumerate() {
        w.store((available >> (32 * i)) as u32, Ordering::Release);
    }
    // Enable forwarding (bit 0: group 0, or the only group without Security Extensions).
    d.ctlr.set(1);
    GicInfo {
        lines,
        cpus,
        security: d.typer.is_set(GICD_TYPER::SECURITY_EXTN),
        iidr: d.iidr.get(),
        available_spis: available.count_ones(),
        readback_errors: errors,
    }
}

/// Sets up the calling core's banked distributor registers (SGIs/PPIs 0..31: all SGIs
/// enabled, PPIs disabled until [`enable_ppi`]) and its CPU interface, and records the core's
/// CPU interface mask for [`route_spi`].
pub fn init_cpu() {
    let d = gicd();
    // GICD_ITARGETSR0..7 are banked and read as the calling core's own mask in every byte
    // (RAZ on a GIC with one CPU interface, where targets do not matter: then the core's bit).
    let own = d.itargetsr[0].get() as u8;
    let cpu = crate::percpu::cpu_id();
    if let Some(m) = CPU_MASK.get(cpu) {
        m.store(
            if own != 0 { own } else { 1 << (cpu & 7) },
            Ordering::Relaxed,
        );
    }
    d.icenabler[0].set(0xFFFF_0000);
    d.icpendr[0].set(u32::MAX);
    let prio = DEFAULT_PRIORITY * 0x0101_0101;
    for i in 0..8 {
        d.ipriorityr[i].set(prio);
    }
    d.isenabler[0].set(0x0000_FFFF);
    let c = gicc();
    c.pmr.set(PRIORITY_MASK);
    c.bpr.set(0);
    // Bit 0: enable signalling of group 0 (or the only group). FIQEn stays clear: IRQ.
    c.ctlr.set(1);
}

/// Enables private peripheral interrupt `id` (16..31) for the calling core.
pub fn enable_ppi(id: u32) {
    debug_assert!((16..32).contains(&id));
    gicd().isenabler[0].set(1 << id);
}

/// Disables private peripheral interrupt `id` (16..31) for the calling core.
pub fn disable_ppi(id: u32) {
    gicd().icenabler[0].set(1 << id);
}

/// Whether user space may have SPI `spi` (`kernel::Hal::irq_line_available`): implemented by
/// the distributor, below [`DEVICE_LINES`], not one of the kernel's.
pub fn spi_available(spi: u32) -> bool {
    let s = spi as usize;
    s < DEVICE_LINES && AVAILABLE[s / 32].load(Ordering::Acquire) & (1 << (s % 32)) != 0
}

/// The GICD_ISENABLER/ICENABLER word and bit of SPI `spi`, if the distributor has it.
fn spi_bit(spi: u32) -> Option<(usize, u32)> {
    (spi < SPIS.load(Ordering::Relaxed)).then(|| {
        let id = spi + 32;
        ((id / 32) as usize, 1 << (id % 32))
    })
}

/// Disables (masks) SPI `spi` at the distributor; nothing for a line it does not have.
pub fn mask_spi(spi: u32) {
    if let Some((word, bit)) = spi_bit(spi) {
        gicd().icenabler[word].set(bit);
    }
}

/// Enables (unmasks) SPI `spi`, if user space may have it.
pub fn unmask_spi(spi: u32) {
    if !spi_available(spi) {
        return;
    }
    if let Some((word, bit)) = spi_bit(spi) {
        gicd().isenabler[word].set(bit);
    }
}

/// The CPU interface mask that targets core `cpu` (its bit before it ran [`init_cpu`]).
pub fn cpu_mask(cpu: CpuIndex) -> u8 {
    match CPU_MASK.get(cpu).map(|m| m.load(Ordering::Relaxed)) {
        Some(m) if m != 0 => m,
        _ => 1 << (cpu & 7),
    }
}

/// The address of SPI `spi`'s GICD_ITARGETSR byte.
fn target_byte(spi: u32) -> *mut u8 {
    let base = gicd().itargetsr.as_ptr() as *mut u8;
    // SAFETY: callers check `spi` against `SPIS`, and GICD_ITARGETSR has one byte per
    // interrupt ID below the implemented 32 * (ITLinesNumber + 1) (at most 1020 in the
    // 255-word array).
    unsafe { base.add(32 + spi as usize) }
}

/// Delivers SPI `spi` to core `target` from now on (its GICD_ITARGETSR byte: byte accesses
/// are architected, so no read-modify-write races another core's routing) and enables it; a
/// line user space may not have is left alone.
pub fn route_spi(spi: u32, target: CpuIndex) {
    if !spi_available(spi) {
        return;
    }
    // SAFETY: the target byte of an implemented SPI (`spi_available` implies it), Device
    // memory; the distributor takes the new target for the interrupt's next forwarding.
    unsafe { target_byte(spi).write_volatile(cpu_mask(target)) };
    unmask_spi(spi);
}

/// SPI `spi`'s GICD_ITARGETSR byte and whether it is enabled, read back from the distributor
/// (`None` for a line it does not have).
pub fn spi_state(spi: u32) -> Option<(u8, bool)> {
    let (word, bit) = spi_bit(spi)?;
    // SAFETY: the target byte of an implemented SPI, Device memory, reads have no effect.
    let target = unsafe { target_byte(spi).read_volatile() };
    Some((target, gicd().isenabler[word].get() & bit != 0))
}

/// Makes SPI `spi` pending by software (GICD_ISPENDR), for self-tests.
pub fn set_spi_pending(spi: u32) {
    if let Some((word, bit)) = spi_bit(spi) {
        dsb();
        gicd().ispendr[word].set(bit);
    }
}

/// Counts an interrupt of SPI `spi` (the IRQ path).
pub(crate) fn count_spi(spi: u32) {
    DELIVERED.count(spi);
}

/// Interrupts SPI `spi` delivered since boot.
pub fn delivered(spi: u32) -> u32 {
    DELIVERED.delivered(spi)
}

/// Self-test of the device-interrupt path without a device: routes SPI `spi` to the calling
/// core, enables it, makes it pending by software (GICD_ISPENDR), lets the core take it with
/// IRQs unmasked, and checks that it arrived, that the IRQ path disabled it (as every device
/// interrupt) and that GICD_ITARGETSR reads back as this core's mask. Leaves the SPI disabled
/// and targeted at core 0. Returns the interrupts seen. For boot checks before the kernel is
/// installed (an interrupt then only counts); the IRQ mask is restored on return.
///
/// # Errors
/// What went wrong, in words.
pub fn spi_self_test(spi: u32, spins: u32) -> Result<u32, &'static str> {
    if !spi_available(spi) {
        return Err("the SPI is not available to drivers");
    }
    let cpu = crate::percpu::cpu_id();
    let before = delivered(spi);
    route_spi(spi, cpu);
    let routed = spi_state(spi);
    set_spi_pending(spi);
    hal_common::irq::with_interrupts_on::<crate::ArmHal, _>(|| {
        let mut n = 0;
        while delivered(spi) == before && n < spins {
            n += 1;
            core::hint::spin_loop();
        }
    });
    let after = spi_state(spi);
    mask_spi(spi);
    // SAFETY: as in `route_spi`: back to core 0, the boot default.
    unsafe { target_byte(spi).write_volatile(cpu_mask(0)) };
    let got = delivered(spi) - before;
    // One CPU interface: GICD_ITARGETSR is read-as-zero.
    let want = if CPUS.load(Ordering::Relaxed) > 1 {
        cpu_mask(cpu)
    } else {
        0
    };
    if routed != Some((want, true)) {
        return Err("GICD_ITARGETSR/ISENABLER read back wrong after routing");
    }
    if got == 0 {
        return Err("the software-pended SPI was not taken");
    }
    if after.is_none_or(|(_, enabled)| enabled) {
        return Err("the IRQ path left the SPI enabled");
    }
    Ok(got)
}

/// Sends SGI `id` (0..15) to core `cpu`.
pub fn send_sgi(cpu: CpuIndex, id: u32) {
    // Complete our earlier stores (what the IPI is about) before the interrupt can be taken.
    dsb();
    gicd().sgir.write(
        GICD_SGIR::TARGET_LIST_FILTER.val(0)
            + GICD_SGIR::CPU_TARGET_LIST.val(1 << (cpu & 7))
            + GICD_SGIR::NSATT.val(0)
            + GICD_SGIR::SGIINTID.val(id & 0xF),
    );
}

/// An acknowledged interrupt, to be passed to [`end_of_interrupt`].
#[derive(Clone, Copy, Debug)]
pub struct Acked {
    raw: u32,
}

impl Acked {
    /// The interrupt ID.
    pub fn id(self) -> u32 {
        self.raw & 0x3FF
    }

    /// For SGIs: the core that sent it.
    pub fn source_cpu(self) -> CpuIndex {
        ((self.raw >> 10) & 7) as CpuIndex
    }
}

/// Acknowledges the highest-priority pending interrupt of the calling core, if any.
pub fn acknowledge() -> Option<Acked> {
    let raw = gicc().iar.get();
    // The acknowledge must be ordered before the handler's reads of the data it announces.
    crate::cpu::dmb();
    if raw & 0x3FF >= 1020 {
        None
    } else {
        Some(Acked { raw })
    }
}

/// Signals the end of handling of `irq` (drops the running priority, deactivates it).
pub fn end_of_interrupt(irq: Acked) {
    // The handler's stores must be visible before the interrupt can be taken again.
    dsb();
    gicc().eoir.set(irq.raw);
}
