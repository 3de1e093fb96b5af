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
//! # Acknowledge and end of interrupt
//! Every interrupt taken must be acknowledged (GICC_IAR) and completed (GICC_EOIR): otherwise
//! it stays active, the CPU interface's running priority stays up and `wfi` never sleeps
//! (QEMU: a secondary that leaves an SGI unacknowledged spins in `wfi`).

use core::sync::atomic::{AtomicUsize, Ordering};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

use crate::cpu::dsb;
use crate::percpu::CpuIndex;

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

/// The IPI kinds and the SGI number each is delivered on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum IpiKind {
    /// Ask the target to reschedule.
    Reschedule = 0,
    /// Ask the target to flush its TLB.
    TlbShootdown = 1,
    /// Ask the target to stop.
    Halt = 2,
    /// Test IPI (boot self-test).
    Test = 3,
}

impl IpiKind {
    /// The SGI number (interrupt ID) this kind is delivered on.
    pub const fn sgi(self) -> u32 {
        self as u32
    }

    /// The kind delivered on SGI `id`, if any.
    pub const fn from_sgi(id: u32) -> Option<IpiKind> {
        match id {
            0 => Some(IpiKind::Reschedule),
            1 => Some(IpiKind::TlbShootdown),
            2 => Some(IpiKind::Halt),
            3 => Some(IpiKind::Test),
            _ => None,
        }
    }
}

/// Priority given to every interrupt the HAL enables (lower is more urgent).
const DEFAULT_PRIORITY: u32 = 0xA0;
/// Priority mask: let everything more urgent than 0xF0 through.
const PRIORITY_MASK: u32 = 0xF0;
/// GICC_IAR value for "no pending interrupt".
pub const SPURIOUS: u32 = 1023;

static GICD: AtomicUsize = AtomicUsize::new(0);
static GICC: AtomicUsize = AtomicUsize::new(0);

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
}

/// Sets up the distributor at `gicd` and records the CPU interface address `gicc`: shared
/// interrupts (SPIs) disabled, at the default priority, routed to core 0. Core 0, once, after
/// its MMU is on.
pub fn init_distributor(gicd_base: usize, gicc_base: usize) -> GicInfo {
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
    // Enable forwarding (bit 0: group 0, or the only group without Security Extensions).
    d.ctlr.set(1);
    GicInfo {
        lines,
        cpus: d.typer.read(GICD_TYPER::CPU_NUMBER) + 1,
        security: d.typer.is_set(GICD_TYPER::SECURITY_EXTN),
        iidr: d.iidr.get(),
    }
}

/// Sets up the calling core's banked distributor registers (SGIs/PPIs 0..31: all SGIs
/// enabled, PPIs disabled until [`enable_ppi`]) and its CPU interface.
pub fn init_cpu() {
    let d = gicd();
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
