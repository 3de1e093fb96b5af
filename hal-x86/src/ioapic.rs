//! The I/O APICs: device interrupt lines (global system interrupts, GSIs) for user drivers.
//!
//! # Why it looks like this
//! The kernel hands device interrupt lines to user space by number (`kernel::Hal`'s
//! `irq_line_available`, `mask_irq`, `unmask_irq`, `route_irq`); on x86 that number is the
//! GSI, the input of an I/O APIC counted across all of them (each one's inputs start at the
//! `gsi_base` the ACPI MADT gives it). `-M microvm` has two I/O APICs (GSI 0-23 at
//! 0xFEC0_0000, 24-47 at 0xFEC1_0000), `q35`/`pc` one.
//!
//! * At boot (`init`, bootstrap processor) every redirection entry of every I/O APIC is
//!   written fully configured and **masked**: vector [`DEVICE_VECTOR_BASE`]` + GSI`, fixed
//!   delivery, physical destination (the bootstrap processor), and the line's trigger mode and
//!   polarity ([`line_config`]). From then on only the mask bit and the destination change.
//! * One vector per GSI (`0x30 + GSI` for GSI below `kernel::config::MAX_IRQS`), so the
//!   interrupt handler knows the line from the vector alone and the local APIC's EOI broadcast
//!   (which I/O APICs match by vector) clears the Remote IRR of exactly that line.
//! * When a line's interrupt arrives (`interrupts::trap_dispatch`), the handler masks the
//!   entry, then signals EOI to the local APIC, then enters the kernel. The mask comes first so
//!   that a level-triggered line the device still asserts is not delivered again once the EOI
//!   broadcast clears Remote IRR; both are uncached (UC) stores, which x86 performs in program
//!   order. The kernel keeps the line masked until the driver's `AckIrq`, whose unmask
//!   re-delivers a level-triggered line the device still asserts (the I/O APIC keeps its input
//!   state while masked). Edge-triggered (ISA) lines drop edges while masked, as on hardware:
//!   their drivers look at the device after every acknowledgement.
//! * The index/data register pair of an I/O APIC is not atomic (select a register, then
//!   access it), so every access from every core goes through one spin lock, taken with
//!   interrupts off (the interrupt handler takes it too).
//!
//! Lines the kernel keeps for itself are never available to user space: the legacy PIT's ISA
//! IRQ 0 (the clock calibration leaves PIT channel 0 running) and COM1's IRQ 4 (the kernel's
//! console), each through its interrupt source override if it has one.
//!
//! The encoding ([`Redirection`]) and the line configuration ([`line_config`],
//! [`reserved_lines`]) are pure code with host unit tests (`cargo test -p hal-x86 --lib`).

use crate::acpi::{AcpiInfo, Polarity, Trigger};

/// Device interrupt lines that get a vector: GSIs `0..DEVICE_LINES` (the kernel's limit).
pub const DEVICE_LINES: usize = kernel::config::DEVICE_IRQS;
/// Vector of GSI 0; GSI `g` (below [`DEVICE_LINES`]) arrives on `DEVICE_VECTOR_BASE + g`.
pub const DEVICE_VECTOR_BASE: u8 = 0x30;

// The device vectors lie above the exceptions (0..32) and the local timer (0x20), below the
// IPIs (0xF0..) and the spurious vector (0xFF).
const _: () = assert!(DEVICE_VECTOR_BASE > 0x20);
const _: () = assert!(DEVICE_VECTOR_BASE as usize + DEVICE_LINES <= 0xF0);

/// The line of a device vector, if `vector` is one.
pub const fn gsi_of_vector(vector: u64) -> Option<u32> {
    let base = DEVICE_VECTOR_BASE as u64;
    if vector >= base && vector < base + DEVICE_LINES as u64 {
        Some((vector - base) as u32)
    } else {
        None
    }
}

/// The vector of GSI `gsi` (GSIs past [`DEVICE_LINES`] stay masked forever; they get the
/// vector of `gsi % DEVICE_LINES` only so that their entries hold a valid vector).
pub const fn vector_of(gsi: u32) -> u8 {
    DEVICE_VECTOR_BASE + (gsi as usize % DEVICE_LINES) as u8
}

const LOW_ACTIVE_LOW: u32 = 1 << 13;
const LOW_LEVEL: u32 = 1 << 15;
const LOW_MASKED: u32 = 1 << 16;
/// Bits of the low dword the I/O APIC reports but ignores on writes: delivery status (12),
/// Remote IRR (14).
const LOW_STATUS: u32 = (1 << 12) | (1 << 14);

/// One redirection table entry in the form the HAL writes: fixed delivery, physical
/// destination mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redirection {
    /// The vector delivered.
    pub vector: u8,
    /// Input polarity.
    pub polarity: Polarity,
    /// Trigger mode.
    pub trigger: Trigger,
    /// Masked (not delivered).
    pub masked: bool,
    /// Destination local APIC id (physical mode).
    pub dest: u8,
}

impl Redirection {
    /// The low dword (register `0x10 + 2 * pin`): vector (0-7), delivery mode fixed (8-10 = 0),
    /// destination mode physical (11 = 0), polarity (13), trigger (15), mask (16).
    pub const fn low(&self) -> u32 {
        let mut v = self.vector as u32;
        if matches!(self.polarity, Polarity::ActiveLow) {
            v |= LOW_ACTIVE_LOW;
        }
        if matches!(self.trigger, Trigger::Level) {
            v |= LOW_LEVEL;
        }
        if self.masked {
            v |= LOW_MASKED;
        }
        v
    }

    /// The high dword (register `0x11 + 2 * pin`): destination in bits 24-31.
    pub const fn high(&self) -> u32 {
        (self.dest as u32) << 24
    }

    /// The entry as one 64-bit value (high dword above low dword).
    pub const fn encode(&self) -> u64 {
        ((self.high() as u64) << 32) | self.low() as u64
    }

    /// Decodes an entry read back from an I/O APIC; `None` if it is not in the form the HAL
    /// writes (another delivery or destination mode, reserved bits set). The read-only status
    /// bits (delivery status, Remote IRR) are ignored.
    pub const fn decode(raw: u64) -> Option<Redirection> {
        let low = raw as u32 & !LOW_STATUS;
        let high = (raw >> 32) as u32;
        let known = 0xFF | LOW_ACTIVE_LOW | LOW_LEVEL | LOW_MASKED;
        if low & !known != 0 || high & 0x00FF_FFFF != 0 {
            return None;
        }
        Some(Redirection {
            vector: low as u8,
            polarity: if low & LOW_ACTIVE_LOW != 0 {
                Polarity::ActiveLow
            } else {
                Polarity::ActiveHigh
            },
            trigger: if low & LOW_LEVEL != 0 {
                Trigger::Level
            } else {
                Trigger::Edge
            },
            masked: low & LOW_MASKED != 0,
            dest: (high >> 24) as u8,
        })
    }
}

/// How GSI `gsi` is wired, from what ACPI tells without AML:
/// * a GSI an ISA interrupt source override names: the override's polarity and trigger (a
///   field that "conforms to the bus" is ISA's edge, active high);
/// * other GSIs below 16: ISA IRQs, edge, active high;
/// * GSIs from 16: level-triggered (PCI INTx and virtio-mmio both are). Polarity: active low
///   on a PC-compatible machine (not hardware-reduced ACPI: `q35`/`pc`, whose GSIs 16-23 are
///   PCI INTx lines), active high on a hardware-reduced one (`-M microvm`, whose DSDT
///   describes its virtio-mmio interrupts as level, active high). The authoritative answer
///   is the device's `_CRS`/`_PRT` in the DSDT, which would need an AML interpreter; QEMU's
///   I/O APIC ignores polarity under TCG, real chipsets do not.
pub fn line_config(acpi: &AcpiInfo, gsi: u32) -> (Polarity, Trigger) {
    if let Some(o) = acpi.isa_source_of(gsi) {
        return (
            o.polarity().unwrap_or(Polarity::ActiveHigh),
            o.trigger().unwrap_or(Trigger::Edge),
        );
    }
    if gsi < 16 {
        (Polarity::ActiveHigh, Trigger::Edge)
    } else if acpi.hw_reduced {
        (Polarity::ActiveHigh, Trigger::Level)
    } else {
        (Polarity::ActiveLow, Trigger::Level)
    }
}

/// ISA IRQs the kernel keeps: 0 (the PIT, left running by the clock calibration) and 4 (COM1,
/// the console).
pub const KERNEL_ISA_IRQS: [u8; 2] = [0, 4];

/// The lines the PIT (ISA IRQ 0) may arrive on: its override's GSI, and GSI 2 as well when
/// the MADT has no override for it. QEMU's I/O APIC model always wires ISA IRQ 0 to pin 2,
/// and `-M microvm`'s MADT omits the override that says so; on a real PC without the
/// override, GSI 2 is the 8259 cascade, which no device uses.
pub fn pit_lines(acpi: &AcpiInfo) -> [u32; 2] {
    let (gsi, _, _) = acpi.isa_irq(0);
    let overridden = acpi.overrides().iter().any(|o| o.bus == 0 && o.source == 0);
    [gsi, if overridden { gsi } else { 2 }]
}

/// Bit `g` set for each GSI `g < 128` the kernel keeps ([`KERNEL_ISA_IRQS`] through their
/// overrides, and [`pit_lines`]).
pub fn reserved_lines(acpi: &AcpiInfo) -> u128 {
    KERNEL_ISA_IRQS
        .iter()
        .map(|&irq| acpi.isa_irq(irq).0)
        .chain(pit_lines(acpi))
        .filter(|&g| g < 128)
        .fold(0, |m, g| m | 1 << g)
}

/// What `init` found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoApicReport {
    /// I/O APICs programmed.
    pub chips: usize,
    /// Their inputs, all together.
    pub lines: u32,
    /// Lines user space may have (`irq_line_available`).
    pub available: u32,
    /// I/O APICs the MADT lists that were skipped (register window not in the uncached
    /// device range, or too many).
    pub skipped: usize,
    /// Entries whose read-back after programming differed from what was written (0 on a
    /// working machine; reported at boot).
    pub readback_errors: u32,
}

#[cfg(target_os = "none")]
pub use hw::*;

#[cfg(target_os = "none")]
mod hw {
    use core::sync::atomic::{AtomicU64, Ordering};

    use super::{
        line_config, pit_lines, reserved_lines, vector_of, IoApicReport, Redirection, DEVICE_LINES,
    };
    use crate::acpi::{AcpiInfo, MAX_IOAPICS};
    use crate::paging::phys_to_virt;

    const REG_VERSION: u32 = 0x01;
    const REG_TABLE: u32 = 0x10;
    /// The register window must lie in the physical window's uncached top 32 MiB below 4 GiB
    /// (see [`paging`](crate::paging)).
    const UNCACHED_START: u64 = 0xFE00_0000;
    const UNCACHED_END: u64 = 1 << 32;

    #[derive(Clone, Copy)]
    struct Chip {
        /// Kernel virtual address of the register window.
        regs: usize,
        gsi_base: u32,
        lines: u32,
    }

    impl Chip {
        /// Reads register `reg` (caller holds the lock).
        fn read(&self, reg: u32) -> u32 {
            let sel = self.regs as *mut u32;
            // SAFETY: `regs` is the register window of an I/O APIC the MADT listed, mapped
            // uncached in the physical window (checked in `init`); the select register is at
            // +0, the data register at +0x10; the lock serialises the pair.
            unsafe {
                sel.write_volatile(reg);
                sel.byte_add(0x10).read_volatile()
            }
        }

        /// Writes register `reg` (caller holds the lock).
        fn write(&self, reg: u32, value: u32) {
            let sel = self.regs as *mut u32;
            // SAFETY: as in `read`; the callers write only redirection entries in the form
            // `Redirection` encodes.
            unsafe {
                sel.write_volatile(reg);
                sel.byte_add(0x10).write_volatile(value);
            }
        }
    }

    struct State {
        chips: [Chip; MAX_IOAPICS],
        count: usize,
        /// The low dword of each line's entry, unmasked (vector, trigger, polarity).
        low: [u32; DEVICE_LINES],
    }

    impl State {
        /// The chip and input pin of `gsi`.
        fn find(&self, gsi: u32) -> Option<(&Chip, u32)> {
            self.chips[..self.count]
                .iter()
                .find(|c| gsi >= c.gsi_base && gsi - c.gsi_base < c.lines)
                .map(|c| (c, gsi - c.gsi_base))
        }
    }

    static STATE: spin::Mutex<State> = spin::Mutex::new(State {
        chips: [Chip {
            regs: 0,
            gsi_base: 0,
            lines: 0,
        }; MAX_IOAPICS],
        count: 0,
        low: [0; DEVICE_LINES],
    });

    /// Lines user space may have: written once by `init`, then only read (lock-free: the
    /// kernel asks inside its critical section, where a lock word would join a transaction's
    /// write set).
    static AVAILABLE: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];

    /// Interrupts delivered per line (for tests and diagnostics).
    static DELIVERED: hal_common::irq::LineCounts<DEVICE_LINES> =
        hal_common::irq::LineCounts::new();

    static REPORT: crate::InitOnce<IoApicReport> = crate::InitOnce::new();

    /// Runs `f` on the locked state with interrupts off (the interrupt handler locks too).
    fn locked<R>(f: impl FnOnce(&mut State) -> R) -> R {
        crate::cpu::without_interrupts(|| f(&mut STATE.lock()))
    }

    /// Programs every I/O APIC the MADT lists: every redirection entry masked, fully
    /// configured, destination the bootstrap processor (`bsp_apic_id`); records the lines
    /// user space may have. Reads every entry back and counts mismatches. Bootstrap processor,
    /// once, before any device line is unmasked.
    pub(crate) fn init(acpi: Option<&AcpiInfo>, bsp_apic_id: u32) -> IoApicReport {
        let Some(acpi) = acpi else {
            return *REPORT.set(IoApicReport::default());
        };
        let mut report = IoApicReport::default();
        let mut present = 0u128;
        locked(|s| {
            for e in acpi.ioapics() {
                let phys = u64::from(e.address);
                if !(UNCACHED_START..UNCACHED_END - 0x20).contains(&phys) {
                    report.skipped += 1;
                    continue;
                }
                let mut chip = Chip {
                    regs: phys_to_virt(phys) as usize,
                    gsi_base: e.gsi_base,
                    lines: 0,
                };
                chip.lines = ((chip.read(REG_VERSION) >> 16) & 0xFF) + 1;
                for pin in 0..chip.lines {
                    let gsi = chip.gsi_base + pin;
                    let (polarity, trigger) = line_config(acpi, gsi);
                    let entry = Redirection {
                        vector: vector_of(gsi),
                        polarity,
                        trigger,
                        masked: true,
                        dest: bsp_apic_id as u8,
                    };
                    // Mask first (the low dword, with the final configuration), then the
                    // destination: the entry is never live with a half-written state.
                    chip.write(REG_TABLE + 2 * pin, entry.low());
                    chip.write(REG_TABLE + 2 * pin + 1, entry.high());
                    let back = u64::from(chip.read(REG_TABLE + 2 * pin))
                        | u64::from(chip.read(REG_TABLE + 2 * pin + 1)) << 32;
                    if Redirection::decode(back) != Some(entry) {
                        report.readback_errors += 1;
                        crate::println!(
                            "hal-x86: io-apic {} pin {pin} (gsi {gsi}): wrote {:#018x}, read \
                             back {back:#018x}",
                            e.id,
                            entry.encode()
                        );
                    }
                    if let Some(low) = s.low.get_mut(gsi as usize) {
                        *low = entry.low() & !super::LOW_MASKED;
                        present |= 1 << gsi;
                    }
                }
                report.lines += chip.lines;
                if s.count < MAX_IOAPICS {
                    s.chips[s.count] = chip;
                    s.count += 1;
                    report.chips += 1;
                } else {
                    report.skipped += 1;
                }
            }
        });
        report.skipped += acpi.ioapic_count.saturating_sub(MAX_IOAPICS);
        let available = present & !reserved_lines(acpi);
        report.available = available.count_ones();
        AVAILABLE[0].store(available as u64, Ordering::Release);
        AVAILABLE[1].store((available >> 64) as u64, Ordering::Release);
        *REPORT.set(report)
    }

    /// What `init` found (all zero before it ran).
    pub fn report() -> IoApicReport {
        REPORT.get().copied().unwrap_or_default()
    }

    /// Whether user space may have line `gsi`: an input of an I/O APIC, below
    /// [`DEVICE_LINES`], not one the kernel keeps ([`reserved_lines`]).
    pub fn is_available(gsi: u32) -> bool {
        let g = gsi as usize;
        g < DEVICE_LINES && AVAILABLE[g / 64].load(Ordering::Acquire) & (1 << (g % 64)) != 0
    }

    /// Masks line `gsi` (nothing for a line no I/O APIC has, or past [`DEVICE_LINES`]: those
    /// are masked since boot).
    pub fn mask(gsi: u32) {
        set_low(gsi, true);
    }

    /// Unmasks line `gsi` (a line that is not available stays masked).
    pub fn unmask(gsi: u32) {
        if is_available(gsi) {
            set_low(gsi, false);
        }
    }

    fn set_low(gsi: u32, masked: bool) {
        if gsi as usize >= DEVICE_LINES {
            return;
        }
        locked(|s| {
            let low = s.low[gsi as usize] | if masked { super::LOW_MASKED } else { 0 };
            if let Some((chip, pin)) = s.find(gsi) {
                chip.write(REG_TABLE + 2 * pin, low);
            }
        });
    }

    /// Delivers line `gsi` to the local APIC `apic_id` from now on and unmasks it (a line that
    /// is not available is left alone).
    pub fn route(gsi: u32, apic_id: u32) {
        if !is_available(gsi) {
            return;
        }
        locked(|s| {
            let low = s.low[gsi as usize];
            if let Some((chip, pin)) = s.find(gsi) {
                // Destination first, then unmask: one 32-bit write each, so the entry is
                // never live with a torn destination.
                chip.write(REG_TABLE + 2 * pin + 1, (apic_id & 0xFF) << 24);
                chip.write(REG_TABLE + 2 * pin, low);
            }
        });
    }

    /// The redirection entry of line `gsi` as the I/O APIC holds it now (read back), with its
    /// raw value; `None` for a line no I/O APIC has.
    pub fn entry(gsi: u32) -> Option<(u64, Option<Redirection>)> {
        locked(|s| {
            let (chip, pin) = s.find(gsi)?;
            let raw = u64::from(chip.read(REG_TABLE + 2 * pin))
                | u64::from(chip.read(REG_TABLE + 2 * pin + 1)) << 32;
            Some((raw, Redirection::decode(raw)))
        })
    }

    /// Self-test of the device-interrupt path with the one device every PC has, the legacy
    /// PIT: routes the lines ISA IRQ 0 may arrive on ([`pit_lines`]: lines the kernel keeps,
    /// so no driver can hold them) to the calling core, lets PIT channel 0 run at about 1 kHz
    /// with interrupts on, and checks that an interrupt arrived on a line's vector, that the
    /// handler masked that line's entry (as every device interrupt's) and that the entry reads
    /// back as routed. Leaves the lines masked and PIT channel 0 in one-shot mode (no further
    /// interrupts). Returns the line and the interrupts seen on it.
    ///
    /// For boot checks before the kernel is installed (an interrupt then only counts); the
    /// interrupt flag is restored on return.
    ///
    /// # Errors
    /// What went wrong, in words: no I/O APIC has the line, no interrupt within `timeout_ms`
    /// (a machine without PIT, or a broken path), or an entry that reads back wrong.
    pub fn pit_self_test(acpi: &AcpiInfo, timeout_ms: u64) -> Result<(u32, u32), &'static str> {
        let lines = pit_lines(acpi);
        if lines
            .iter()
            .all(|&g| g as usize >= DEVICE_LINES || locked(|s| s.find(g).is_none()))
        {
            return Err("no I/O APIC has ISA IRQ 0's line");
        }
        let me = crate::apic::id();
        let before = lines.map(delivered);
        // SAFETY: PIT channel 0 (ports 0x40/0x43): rate generator (mode 2), count 1193
        // (1.193182 MHz / 1193 = 1 kHz). The clock calibration is over; nothing else uses it.
        unsafe {
            crate::cpu::outb(0x43, 0x34);
            crate::cpu::outb(0x40, (1193 & 0xFF) as u8);
            crate::cpu::outb(0x40, (1193 >> 8) as u8);
        }
        for gsi in lines {
            locked(|s| {
                let low = s.low.get(gsi as usize).copied();
                if let (Some(low), Some((chip, pin))) = (low, s.find(gsi)) {
                    chip.write(REG_TABLE + 2 * pin + 1, (me & 0xFF) << 24);
                    chip.write(REG_TABLE + 2 * pin, low);
                }
            });
        }
        let arrived = || (0..2).find(|&i| delivered(lines[i]) != before[i]);
        let start = crate::time::cycles();
        hal_common::irq::with_interrupts_on::<crate::X86Hal, _>(|| {
            while arrived().is_none()
                && crate::time::tsc_to_ns(crate::time::cycles() - start) < timeout_ms * 1_000_000
            {
                core::hint::spin_loop();
            }
        });
        // Stop the PIT: mode 0 (interrupt on terminal count), loaded once, never reloaded.
        // SAFETY: as above.
        unsafe {
            crate::cpu::outb(0x43, 0x30);
            crate::cpu::outb(0x40, 0xFF);
            crate::cpu::outb(0x40, 0xFF);
        }
        let hit = arrived();
        let backs = lines.map(|g| entry(g).and_then(|(_, e)| e));
        for gsi in lines {
            mask(gsi);
        }
        let Some(i) = hit else {
            return Err("no PIT interrupt arrived on its I/O APIC line");
        };
        let gsi = lines[i];
        match backs[i] {
            Some(e) if e.masked && u32::from(e.dest) == me & 0xFF && e.vector == vector_of(gsi) => {
                Ok((gsi, delivered(gsi) - before[i]))
            }
            Some(e) if !e.masked => Err("the interrupt handler left the line unmasked"),
            _ => Err("the routed entry reads back wrong"),
        }
    }

    /// Counts an interrupt of line `gsi` (the interrupt handler).
    pub(crate) fn count(gsi: u32) {
        DELIVERED.count(gsi);
    }

    /// Interrupts line `gsi` delivered since boot.
    pub fn delivered(gsi: u32) -> u32 {
        DELIVERED.delivered(gsi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirection_encoding() {
        let e = Redirection {
            vector: 0x5F,
            polarity: Polarity::ActiveHigh,
            trigger: Trigger::Level,
            masked: true,
            dest: 3,
        };
        assert_eq!(e.low(), 0x5F | 1 << 15 | 1 << 16);
        assert_eq!(e.high(), 3 << 24);
        assert_eq!(e.encode(), 0x0300_0000_0001_805F);
        assert_eq!(Redirection::decode(e.encode()), Some(e));
        // Remote IRR and delivery status are read-only and ignored.
        assert_eq!(Redirection::decode(e.encode() | 1 << 14 | 1 << 12), Some(e));
        let edge = Redirection {
            vector: 0x32,
            polarity: Polarity::ActiveLow,
            trigger: Trigger::Edge,
            masked: false,
            dest: 0,
        };
        assert_eq!(edge.encode(), 0x2032);
        assert_eq!(Redirection::decode(edge.encode()), Some(edge));
        // Logical destination mode, another delivery mode, reserved destination bits.
        assert_eq!(Redirection::decode(0x832), None);
        assert_eq!(Redirection::decode(0x132), None);
        assert_eq!(Redirection::decode(1 << 40 | 0x32), None);
    }

    #[test]
    fn line_configuration() {
        let mut pc = AcpiInfo::EMPTY;
        pc.override_entries[0] = crate::acpi::InterruptOverride {
            bus: 0,
            source: 0,
            gsi: 2,
            flags: 0,
        };
        pc.override_entries[1] = crate::acpi::InterruptOverride {
            bus: 0,
            source: 9,
            gsi: 9,
            flags: 0xD,
        };
        pc.override_count = 2;
        assert_eq!(line_config(&pc, 2), (Polarity::ActiveHigh, Trigger::Edge));
        assert_eq!(line_config(&pc, 9), (Polarity::ActiveHigh, Trigger::Level));
        assert_eq!(line_config(&pc, 4), (Polarity::ActiveHigh, Trigger::Edge));
        assert_eq!(line_config(&pc, 16), (Polarity::ActiveLow, Trigger::Level));
        // IRQ 0 through its override (GSI 2), IRQ 4 on GSI 4.
        assert_eq!(reserved_lines(&pc), 1 << 2 | 1 << 4);
        let mut microvm = pc;
        microvm.hw_reduced = true;
        assert_eq!(
            line_config(&microvm, 47),
            (Polarity::ActiveHigh, Trigger::Level)
        );
        // Without an override for IRQ 0, GSI 2 too (QEMU wires the PIT there).
        assert_eq!(reserved_lines(&AcpiInfo::EMPTY), 1 << 0 | 1 << 2 | 1 << 4);
    }

    #[test]
    fn vectors() {
        assert_eq!(vector_of(0), 0x30);
        assert_eq!(vector_of(47), 0x5F);
        assert_eq!(gsi_of_vector(0x5F), Some(47));
        assert_eq!(gsi_of_vector(0x2F), None);
        assert_eq!(gsi_of_vector(0x30 + DEVICE_LINES as u64), None);
        assert_eq!(gsi_of_vector(0xF0), None);
    }
}
