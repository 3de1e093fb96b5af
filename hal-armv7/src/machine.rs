//! The two supported machines, their memory maps, and the identity map the MMU uses for them.
//!
//! Pure data and arithmetic, so it builds (and is unit-tested) on the host too.
//!
//! # Which machine are we on?
//! One kernel image runs on both (see `link.ld`). The boot code tells them apart by the CPU:
//! QEMU's `sabrelite` has Cortex-A9 cores (MIDR part number 0xC09), `virt` is run with
//! `-cpu cortex-a15` (0xC0F; a Cortex-A7, 0xC07, is treated the same). The A9's PERIPHBASE is
//! then read from CBAR rather than assumed.
//!
//! # Memory maps (identity mapped with 1 MiB sections)
//! | machine   | device window (shareable Device, XN) | RAM window (Normal WBWA, shareable) |
//! |-----------|--------------------------------------|-------------------------------------|
//! | sabrelite | `0x0000_0000..0x1000_0000` (ROM, OCRAM, MPCore, AIPS1/2 peripherals) | `0x1000_0000..0x5000_0000` (the board's 1 GiB of DDR) |
//! | virt      | `0x0800_0000..0x1000_0000` (GIC, PL011, RTC, fw_cfg, virtio-mmio) | `0x4000_0000..0x8000_0000` |
//!
//! Everything else is left as a translation fault, so a stray pointer is reported instead of
//! silently hitting something. The RAM window is a fixed size rather than the `-m` size: QEMU
//! gives an ELF on sabrelite no memory description, and the window only has to cover what the
//! kernel touches. Mapping more than is populated is harmless under QEMU; on hardware the
//! window must not exceed the DRAM (speculative fetches into a hole can raise external aborts).

/// A supported board or virtual machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// QEMU `-M sabrelite`: NXP i.MX6Quad (4x Cortex-A9 MPCore), the Boundary Devices Sabre Lite.
    Sabrelite,
    /// QEMU `-M virt -cpu cortex-a15`: GICv2, PL011, PSCI, generic timer.
    Virt,
}

/// MIDR primary part number of the Cortex-A9.
pub const PART_CORTEX_A9: u32 = 0xC09;
/// MIDR primary part number of the Cortex-A15.
pub const PART_CORTEX_A15: u32 = 0xC0F;
/// MIDR primary part number of the Cortex-A7.
pub const PART_CORTEX_A7: u32 = 0xC07;

/// Section size of the short-descriptor translation table (first level): 1 MiB.
pub const SECTION_SIZE: u32 = 1 << 20;
/// Entries in the first-level table: 4096 sections cover 4 GiB.
pub const L1_ENTRIES: usize = 4096;

/// i.MX6 Cortex-A9 MPCore private region (PERIPHBASE), used when CBAR reads 0 (QEMU with
/// `-smp 1` leaves CBAR unset).
pub const IMX6_PERIPHBASE: usize = 0x00A0_0000;
/// i.MX6 UART1, where QEMU's sabrelite connects `serial0` (so `-serial stdio`).
pub const IMX_UART1: usize = 0x0202_0000;
/// i.MX6 UART2: the Sabre Lite's console connector (`serial1` in QEMU's model).
pub const IMX_UART2: usize = 0x021E_8000;

/// Which UART the kernel keeps as its console; the other one of the Sabre Lite is a user
/// driver's. UART1 by default (QEMU's `serial0`); `console=uart2` on the command line picks
/// UART2, the real board's console connector (the boot script `cargo xtask flash` writes says
/// so). Set once by core 0 before the GIC and the user devices are set up.
static SABRELITE_UART2_CONSOLE: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// Makes UART2 the Sabre Lite's console (see [`Machine::uart_base`]). Core 0, during boot,
/// before the GIC distributor is set up and the user devices are handed out.
pub fn use_uart2_console() {
    SABRELITE_UART2_CONSOLE.store(true, core::sync::atomic::Ordering::Release);
}

fn uart2_console() -> bool {
    SABRELITE_UART2_CONSOLE.load(core::sync::atomic::Ordering::Acquire)
}
/// i.MX6 System Reset Controller (secondary core release, SRC_GPRn entry registers).
pub const IMX_SRC: usize = 0x020D_8000;
/// virt: PL011 UART (`serial0`).
pub const VIRT_PL011: usize = 0x0900_0000;
/// virt: GICv2 distributor.
pub const VIRT_GICD: usize = 0x0800_0000;
/// virt: GICv2 CPU interface.
pub const VIRT_GICC: usize = 0x0801_0000;
/// virt: where QEMU places the device tree for a bare-metal ELF (the start of RAM).
pub const VIRT_DTB: usize = 0x4000_0000;

/// Offsets inside the Cortex-A9 MPCore private memory region (PERIPHBASE, from CBAR).
pub mod a9 {
    /// Snoop Control Unit.
    pub const SCU: usize = 0x0000;
    /// GIC CPU interface.
    pub const GICC: usize = 0x0100;
    /// Global timer (shared 64-bit counter, the cycle source).
    pub const GLOBAL_TIMER: usize = 0x0200;
    /// Private timer and watchdog (banked per core).
    pub const PRIVATE_TIMER: usize = 0x0600;
    /// GIC distributor.
    pub const GICD: usize = 0x1000;
}

impl Machine {
    /// The machine for a CPU with this MIDR, if supported.
    pub const fn from_midr(midr: u32) -> Option<Machine> {
        match part_number(midr) {
            PART_CORTEX_A9 => Some(Machine::Sabrelite),
            PART_CORTEX_A15 | PART_CORTEX_A7 => Some(Machine::Virt),
            _ => None,
        }
    }

    /// Short name, as QEMU's `-M` option spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Machine::Sabrelite => "sabrelite",
            Machine::Virt => "virt",
        }
    }

    /// A longer description for the boot log.
    pub const fn description(self) -> &'static str {
        match self {
            Machine::Sabrelite => "i.MX6Q Sabre Lite, Cortex-A9 MPCore",
            Machine::Virt => "QEMU virt, GICv2, PSCI",
        }
    }

    /// `(start, size)` of the window mapped as normal cacheable memory.
    pub const fn ram_window(self) -> (u32, u32) {
        match self {
            Machine::Sabrelite => (0x1000_0000, 0x4000_0000),
            Machine::Virt => (0x4000_0000, 0x4000_0000),
        }
    }

    /// `(start, size)` of the window mapped as device memory.
    pub const fn device_window(self) -> (u32, u32) {
        match self {
            Machine::Sabrelite => (0x0000_0000, 0x1000_0000),
            Machine::Virt => (0x0800_0000, 0x0800_0000),
        }
    }

    /// The device-memory ranges `(start, end)` user drivers may own: on the Sabre Lite the
    /// UART that is not the console and the ENET (FEC) Ethernet controller, on virt the 32
    /// virtio-mmio transports and the PL031 real-time clock. Never the kernel's console UART,
    /// the GIC or the timers.
    pub fn user_devices(self) -> &'static [(u64, u64)] {
        const ENET: (u64, u64) = (0x0218_8000, 0x0218_C000);
        match self {
            Machine::Sabrelite if uart2_console() => &[(0x0202_0000, 0x0202_4000), ENET],
            Machine::Sabrelite => &[(0x021E_8000, 0x021E_C000), ENET],
            Machine::Virt => &[(0x0A00_0000, 0x0A00_4000), (0x0901_0000, 0x0901_1000)],
        }
    }

    /// The shared peripheral interrupts (SPI numbers, interrupt ID - 32) of the devices the
    /// kernel keeps: the console UART (i.MX6 UART1 is SPI 26, UART2 SPI 27, virt's PL011 SPI
    /// 1). Never offered to user drivers.
    pub fn kernel_spis(self) -> &'static [u32] {
        match self {
            Machine::Sabrelite if uart2_console() => &[27],
            Machine::Sabrelite => &[26],
            Machine::Virt => &[1],
        }
    }

    /// Physical address of the console UART.
    pub fn uart_base(self) -> usize {
        match self {
            Machine::Sabrelite if uart2_console() => IMX_UART2,
            Machine::Sabrelite => IMX_UART1,
            Machine::Virt => VIRT_PL011,
        }
    }

    /// What memory the section containing `addr` maps to.
    pub const fn section_kind(self, addr: u32) -> SectionKind {
        let (ram, ram_size) = self.ram_window();
        let (dev, dev_size) = self.device_window();
        if addr >= ram && addr - ram < ram_size {
            SectionKind::Normal
        } else if addr >= dev && addr - dev < dev_size {
            SectionKind::Device
        } else {
            SectionKind::Fault
        }
    }
}

/// The A9 global timer's frequency (see `timer.rs`) from two bracketed samples: at each end the GPT count and the
/// global timer read just before and just after it. Rounded to whole MHz; `None` unless the GPT
/// advanced and the result is a plausible PERIPHCLK (10 MHz to 2 GHz).
pub fn hz_from_gpt_samples(
    start: (u32, u64, u64),
    end: (u32, u64, u64),
    gpt_hz: u64,
) -> Option<u64> {
    let gpt_ticks = u64::from(end.0.wrapping_sub(start.0));
    if gpt_ticks == 0 {
        return None;
    }
    // The midpoints of the brackets (their width is the read's uncertainty).
    let mid = |(_, a, b): (u32, u64, u64)| a + b.wrapping_sub(a) / 2;
    let cycles = mid(end).wrapping_sub(mid(start));
    let hz = (u128::from(cycles) * u128::from(gpt_hz) / u128::from(gpt_ticks)) as u64;
    let mhz = (hz + 500_000) / 1_000_000;
    (10..=2000).contains(&mhz).then_some(mhz * 1_000_000)
}

/// MIDR bits \[15:4\], the primary part number.
pub const fn part_number(midr: u32) -> u32 {
    (midr >> 4) & 0xFFF
}

/// The CPU name for a MIDR, for the boot log.
pub const fn cpu_name(midr: u32) -> &'static str {
    match part_number(midr) {
        PART_CORTEX_A9 => "Cortex-A9",
        PART_CORTEX_A15 => "Cortex-A15",
        PART_CORTEX_A7 => "Cortex-A7",
        _ => "unknown CPU",
    }
}

/// The kind of memory a first-level section maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectionKind {
    /// Not mapped: any access is a translation fault.
    Fault,
    /// Normal memory, inner and outer write-back write-allocate, shareable, execute-never
    /// (the kernel image's own text is mapped executable page by page, see `mmu`).
    Normal,
    /// Shareable Device memory, execute-never.
    Device,
}

/// Short-descriptor section entry bits (ARM ARM B3.5.1), with TEX remap off (SCTLR.TRE = 0).
pub mod desc {
    /// Bits \[1:0\] = 0b10: a 1 MiB section.
    pub const SECTION: u32 = 0b10;
    /// B: bufferable.
    pub const B: u32 = 1 << 2;
    /// C: cacheable.
    pub const C: u32 = 1 << 3;
    /// XN: execute never.
    pub const XN: u32 = 1 << 4;
    /// AP\[1:0\] = 0b01: read/write at PL1, no access at PL0.
    pub const AP_PL1_RW: u32 = 0b01 << 10;
    /// TEX\[2:0\] = 0b001 (with C = B = 1: Normal, outer and inner write-back write-allocate).
    pub const TEX_001: u32 = 0b001 << 12;
    /// S: shareable (for Normal memory; Device memory is shareable through TEX/C/B).
    pub const S: u32 = 1 << 16;
}

/// The first-level descriptor identity-mapping the section at `addr` as `kind` (domain 0,
/// global, kernel-only access).
pub const fn section_descriptor(addr: u32, kind: SectionKind) -> u32 {
    let base = addr & !(SECTION_SIZE - 1);
    match kind {
        SectionKind::Fault => 0,
        // TEX=001 C=1 B=1: Normal WBWA; S=1 so the SCU keeps it coherent between the cores
        // (LDREX/STREX on it use the cache-coherent exclusive monitors). XN: RAM is data (page
        // tables, frames, the device tree); the kernel image's sections are replaced by
        // second-level tables that make its text executable (see `mmu`).
        SectionKind::Normal => {
            base | desc::S
                | desc::TEX_001
                | desc::AP_PL1_RW
                | desc::C
                | desc::B
                | desc::XN
                | desc::SECTION
        }
        // TEX=000 C=0 B=1: Shareable Device: no speculation, no merging, accesses in order.
        SectionKind::Device => base | desc::AP_PL1_RW | desc::XN | desc::B | desc::SECTION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_from_midr() {
        // QEMU's values: Cortex-A9 r0p0 and Cortex-A15 r2p1.
        assert_eq!(Machine::from_midr(0x410F_C090), Some(Machine::Sabrelite));
        assert_eq!(Machine::from_midr(0x412F_C0F1), Some(Machine::Virt));
        assert_eq!(Machine::from_midr(0x410F_D034), None);
        assert_eq!(cpu_name(0x410F_C090), "Cortex-A9");
    }

    #[test]
    fn memory_maps() {
        let s = Machine::Sabrelite;
        assert_eq!(s.section_kind(0x0202_0000), SectionKind::Device);
        assert_eq!(s.section_kind(0x00A0_0000), SectionKind::Device);
        assert_eq!(s.section_kind(0x4020_0000), SectionKind::Normal);
        assert_eq!(s.section_kind(0x4FF0_0000), SectionKind::Normal);
        assert_eq!(s.section_kind(0x5000_0000), SectionKind::Fault);
        let v = Machine::Virt;
        assert_eq!(v.section_kind(0x0900_0000), SectionKind::Device);
        assert_eq!(v.section_kind(0x0000_0000), SectionKind::Fault);
        assert_eq!(v.section_kind(0x4020_0000), SectionKind::Normal);
        assert_eq!(v.section_kind(0xF000_0000), SectionKind::Fault);
        // The image base is RAM on both machines.
        assert_eq!(s.section_kind(0x4020_0000), v.section_kind(0x4020_0000));
    }

    #[test]
    fn descriptors() {
        assert_eq!(
            section_descriptor(0x4020_0000, SectionKind::Normal),
            // XN (0x10) since RAM sections are data; the image's text is mapped by pages.
            0x4020_0000 | 0x1_141E
        );
        assert_eq!(
            section_descriptor(0x0212_3456, SectionKind::Device),
            0x0210_0000 | 0x416
        );
        assert_eq!(section_descriptor(0x1234_5678, SectionKind::Fault), 0);
    }

    #[test]
    fn frequency_from_bracketed_samples() {
        // 15000 GPT ticks at 3 MHz = 5 ms: 500000 cycles at 100 MHz, 1980000 at 396 MHz.
        let at = |gpt: u32, cycles: u64, width: u64| (gpt, cycles - width / 2, cycles + width / 2);
        assert_eq!(
            hz_from_gpt_samples(at(10, 1000, 40), at(15_010, 501_000, 60), 3_000_000),
            Some(100_000_000)
        );
        assert_eq!(
            hz_from_gpt_samples(at(0, 7_000, 0), at(15_000, 1_987_000, 0), 3_000_000),
            Some(396_000_000)
        );
        // Small errors round away; the GPT counter may wrap.
        assert_eq!(
            hz_from_gpt_samples(
                at(u32::MAX - 5, 50, 20),
                at(14_994, 500_900 + 50, 20),
                3_000_000
            ),
            Some(100_000_000)
        );
        // A GPT that did not move, or an implausible result, is no calibration.
        assert_eq!(
            hz_from_gpt_samples(at(5, 1000, 0), at(5, 900_000, 0), 3_000_000),
            None
        );
        assert_eq!(
            hz_from_gpt_samples(at(0, 1000, 0), at(15_000, 1_100, 0), 3_000_000),
            None
        );
    }
}
