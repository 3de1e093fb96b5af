//! A small ACPI table reader: RSDP -> RSDT/XSDT -> MADT (CPUs, local APIC address, I/O APICs,
//! interrupt source overrides), FADT (PM timer), HPET, SRAT (memory nodes: which proximity
//! domain each CPU and each range of memory belongs to).
//!
//! Hand-written instead of the `acpi` crate: the HAL needs five fixed-layout tables and no AML,
//! this stays allocation-free, and it is pure code over a [`PhysMemory`] view, so the host unit
//! tests below run it on synthetic tables (`cargo test -p hal-x86 --lib`).
//!
//! The crate was checked again for the SRAT (2026-11, `cargo info acpi`): 5.2.0 is the newest
//! release and has no SRAT parser (only the signature); 7.0.0-pre1, still a pre-release a year
//! on, builds without `alloc` and parses the SRAT (`sdt::srat::Srat::entries`). Taking a
//! pre-release for the one table the pager needs would add an `AcpiHandler` over the physical
//! window and another over the test buffers, and change how bad tables are skipped, for about
//! the hundred lines `parse_srat` takes; so the reader stays hand-written. Revisit once a 7.x
//! is released.
//!
//! Every table's checksum is verified; the RSDP and the root table must be valid, other tables
//! with a bad checksum are skipped (and counted in [`AcpiInfo::bad_tables`]). Entries of the
//! MADT and the SRAT are kept in fixed arrays; what does not fit, and SRAT entries that are
//! malformed, is skipped and counted ([`Srat::skipped`]), never a panic.

/// Read access to physical memory.
pub trait PhysMemory {
    /// The `len` bytes at physical address `phys`, or `None` if they are not accessible.
    fn read(&self, phys: u64, len: usize) -> Option<&[u8]>;
}

/// Most local APIC entries kept from the MADT.
pub const MAX_ACPI_CPUS: usize = 64;
/// Most root-table entries kept.
pub const MAX_TABLES: usize = 32;
/// Most I/O APIC entries kept from the MADT (`-M microvm` has two, PCs one).
pub const MAX_IOAPICS: usize = 8;
/// Most interrupt source overrides kept from the MADT (at most one per ISA IRQ).
pub const MAX_OVERRIDES: usize = 16;

/// Most memory affinity entries kept from the SRAT (QEMU writes one or two per node, plus
/// disabled padding; real two-socket machines a handful).
pub const MAX_SRAT_MEMORY: usize = 16;

/// A processor's proximity domain, from the SRAT (local APIC or x2APIC affinity entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CpuAffinity {
    /// Local APIC (or x2APIC) id, as in the MADT.
    pub apic_id: u32,
    /// Proximity domain.
    pub domain: u32,
}

/// A range of physical memory and its proximity domain, from the SRAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MemoryAffinity {
    /// First byte.
    pub base: u64,
    /// Bytes (at least 1; `base + length` does not overflow).
    pub length: u64,
    /// Proximity domain.
    pub domain: u32,
    /// Flag bit 1: memory may be added or removed here at run time (the range says where
    /// hot-plugged memory would go; whether memory is present now is the memory map's
    /// business).
    pub hot_pluggable: bool,
    /// Flag bit 2: non-volatile memory.
    pub non_volatile: bool,
}

impl MemoryAffinity {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.base + self.length
    }

    /// Whether `phys` lies in the range.
    pub fn contains(&self, phys: u64) -> bool {
        (self.base..self.end()).contains(&phys)
    }
}

/// The System Resource Affinity Table: which proximity domain (memory node) each processor and
/// each range of memory belongs to. Only enabled entries are kept (flag bit 0; disabled ones
/// are padding or absent hardware, and counted in [`Srat::disabled`]).
#[derive(Clone, Copy, Debug)]
pub struct Srat {
    /// Processor affinities, in table order.
    pub cpu_entries: [CpuAffinity; MAX_ACPI_CPUS],
    /// How many entries of `cpu_entries` are valid.
    pub cpu_count: usize,
    /// Memory affinities, in table order.
    pub memory_entries: [MemoryAffinity; MAX_SRAT_MEMORY],
    /// How many entries of `memory_entries` are valid.
    pub memory_count: usize,
    /// Entries left out because their enabled flag is clear.
    pub disabled: usize,
    /// Entries left out because they are malformed (too short, an empty or wrapping range) or
    /// do not fit the arrays.
    pub skipped: usize,
}

impl Srat {
    /// Nothing found.
    pub const EMPTY: Self = Self {
        cpu_entries: [CpuAffinity {
            apic_id: 0,
            domain: 0,
        }; MAX_ACPI_CPUS],
        cpu_count: 0,
        memory_entries: [MemoryAffinity {
            base: 0,
            length: 0,
            domain: 0,
            hot_pluggable: false,
            non_volatile: false,
        }; MAX_SRAT_MEMORY],
        memory_count: 0,
        disabled: 0,
        skipped: 0,
    };

    /// The enabled processor affinities.
    pub fn cpus(&self) -> &[CpuAffinity] {
        &self.cpu_entries[..self.cpu_count]
    }

    /// The enabled memory affinities.
    pub fn memory(&self) -> &[MemoryAffinity] {
        &self.memory_entries[..self.memory_count]
    }

    /// The proximity domain of the processor with local APIC id `apic_id`, if the table
    /// lists it.
    pub fn domain_of_apic(&self, apic_id: u32) -> Option<u32> {
        self.cpus()
            .iter()
            .find(|c| c.apic_id == apic_id)
            .map(|c| c.domain)
    }

    /// The proximity domain of the memory at `phys`, if a range of the table holds it.
    pub fn domain_of_address(&self, phys: u64) -> Option<u32> {
        self.memory()
            .iter()
            .find(|m| m.contains(phys))
            .map(|m| m.domain)
    }

    /// Distinct proximity domains of the processors and memory listed, how many.
    pub fn domain_count(&self) -> usize {
        let cpu = self.cpus().iter().map(|c| c.domain);
        let mem = self.memory().iter().map(|m| m.domain);
        let all = || cpu.clone().chain(mem.clone());
        all()
            .enumerate()
            .filter(|&(i, d)| !all().take(i).any(|e| e == d))
            .count()
    }
}

/// An I/O APIC listed in the MADT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IoApicEntry {
    /// I/O APIC id.
    pub id: u8,
    /// Physical address of its register window (index at +0, data at +0x10).
    pub address: u32,
    /// Global system interrupt of its input 0.
    pub gsi_base: u32,
}

/// Polarity of an interrupt input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polarity {
    /// Asserted high.
    ActiveHigh,
    /// Asserted low.
    ActiveLow,
}

/// Trigger mode of an interrupt input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Edge-triggered.
    Edge,
    /// Level-triggered.
    Level,
}

/// An interrupt source override: ISA IRQ `source` arrives on `gsi`, with the MPS INTI flags
/// `flags` (bits 0-1 polarity, 2-3 trigger mode; 0 = conforms to the bus: ISA is edge, high).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct InterruptOverride {
    /// Bus (0 = ISA).
    pub bus: u8,
    /// Bus-relative IRQ.
    pub source: u8,
    /// The global system interrupt it is wired to.
    pub gsi: u32,
    /// MPS INTI flags.
    pub flags: u16,
}

impl InterruptOverride {
    /// The polarity the flags give, `None` if they say "conforms to the bus".
    pub fn polarity(&self) -> Option<Polarity> {
        match self.flags & 3 {
            1 => Some(Polarity::ActiveHigh),
            3 => Some(Polarity::ActiveLow),
            _ => None,
        }
    }

    /// The trigger mode the flags give, `None` if they say "conforms to the bus".
    pub fn trigger(&self) -> Option<Trigger> {
        match (self.flags >> 2) & 3 {
            1 => Some(Trigger::Edge),
            3 => Some(Trigger::Level),
            _ => None,
        }
    }
}

/// A processor listed in the MADT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LocalApic {
    /// Local APIC (or x2APIC) id.
    pub apic_id: u32,
    /// ACPI processor UID.
    pub processor_uid: u32,
    /// Flag bit 0: usable now.
    pub enabled: bool,
    /// Flag bit 1: may be enabled later (hot-plug).
    pub online_capable: bool,
}

/// The ACPI power-management timer (3.579545 MHz), from the FADT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmTimer {
    /// I/O port of the counter.
    pub port: u16,
    /// Whether the counter is 32 bits wide (else 24).
    pub ext32: bool,
}

/// Frequency of the ACPI PM timer.
pub const PM_TIMER_HZ: u64 = 3_579_545;

/// What the HAL uses from ACPI.
#[derive(Clone, Copy, Debug)]
pub struct AcpiInfo {
    /// RSDP revision (0 = ACPI 1.0 with RSDT, 2+ = XSDT).
    pub revision: u8,
    /// OEM id from the RSDP.
    pub oem_id: [u8; 6],
    /// Signatures of the tables the root table lists.
    pub signatures: [[u8; 4]; MAX_TABLES],
    /// How many entries of `signatures` are valid.
    pub table_count: usize,
    /// Tables skipped because of a bad checksum or an unreadable address.
    pub bad_tables: usize,
    /// Physical address of the local APIC (MADT, possibly overridden).
    pub lapic_address: u64,
    /// Processors from the MADT, in table order.
    pub cpus: [LocalApic; MAX_ACPI_CPUS],
    /// How many entries of `cpus` are valid.
    pub cpu_count: usize,
    /// I/O APICs listed in the MADT (may exceed [`MAX_IOAPICS`]; see [`AcpiInfo::ioapics`]).
    pub ioapic_count: usize,
    /// The first [`MAX_IOAPICS`] I/O APICs, in table order.
    pub ioapic_entries: [IoApicEntry; MAX_IOAPICS],
    /// Interrupt source overrides, in table order.
    pub override_entries: [InterruptOverride; MAX_OVERRIDES],
    /// How many entries of `override_entries` are valid.
    pub override_count: usize,
    /// MADT flag PCAT_COMPAT: a legacy 8259 PIC pair is present.
    pub has_8259: bool,
    /// Whether a MADT was found.
    pub has_madt: bool,
    /// The PM timer, if the FADT has one.
    pub pm_timer: Option<PmTimer>,
    /// FADT flag HW_REDUCED_ACPI.
    pub hw_reduced: bool,
    /// HPET base address, if an HPET table exists.
    pub hpet: Option<u64>,
    /// The SRAT, if the root table lists one with a valid checksum (the first, if several).
    pub srat: Option<Srat>,
}

impl AcpiInfo {
    /// Nothing found (the start of [`parse`]; unit tests build on it).
    pub(crate) const EMPTY: Self = Self {
        revision: 0,
        oem_id: [0; 6],
        signatures: [[0; 4]; MAX_TABLES],
        table_count: 0,
        bad_tables: 0,
        lapic_address: 0xFEE0_0000,
        cpus: [LocalApic {
            apic_id: 0,
            processor_uid: 0,
            enabled: false,
            online_capable: false,
        }; MAX_ACPI_CPUS],
        cpu_count: 0,
        ioapic_count: 0,
        ioapic_entries: [IoApicEntry {
            id: 0,
            address: 0,
            gsi_base: 0,
        }; MAX_IOAPICS],
        override_entries: [InterruptOverride {
            bus: 0,
            source: 0,
            gsi: 0,
            flags: 0,
        }; MAX_OVERRIDES],
        override_count: 0,
        has_8259: false,
        has_madt: false,
        pm_timer: None,
        hw_reduced: false,
        hpet: None,
        srat: None,
    };

    /// Processors from the MADT (enabled or not).
    pub fn cpus(&self) -> &[LocalApic] {
        &self.cpus[..self.cpu_count]
    }

    /// Processors that are enabled (usable now).
    pub fn enabled_cpus(&self) -> impl Iterator<Item = &LocalApic> {
        self.cpus().iter().filter(|c| c.enabled)
    }

    /// The I/O APICs the MADT lists (at most [`MAX_IOAPICS`]).
    pub fn ioapics(&self) -> &[IoApicEntry] {
        &self.ioapic_entries[..self.ioapic_count.min(MAX_IOAPICS)]
    }

    /// The interrupt source overrides the MADT lists.
    pub fn overrides(&self) -> &[InterruptOverride] {
        &self.override_entries[..self.override_count]
    }

    /// Where ISA IRQ `irq` arrives and how: its override, or by default GSI `irq`, edge,
    /// active high (the ISA bus convention). Polarity or trigger an override leaves to the bus
    /// ("conforms") stay the ISA default.
    pub fn isa_irq(&self, irq: u8) -> (u32, Polarity, Trigger) {
        match self
            .overrides()
            .iter()
            .find(|o| o.bus == 0 && o.source == irq)
        {
            Some(o) => (
                o.gsi,
                o.polarity().unwrap_or(Polarity::ActiveHigh),
                o.trigger().unwrap_or(Trigger::Edge),
            ),
            None => (u32::from(irq), Polarity::ActiveHigh, Trigger::Edge),
        }
    }

    /// The ISA IRQ whose override names `gsi`, if any.
    pub fn isa_source_of(&self, gsi: u32) -> Option<&InterruptOverride> {
        self.overrides().iter().find(|o| o.bus == 0 && o.gsi == gsi)
    }

    /// Signatures of the tables found, as strings.
    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.signatures[..self.table_count]
            .iter()
            .map(|s| core::str::from_utf8(s).unwrap_or("????"))
    }
}

/// Why ACPI could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcpiError {
    /// The RSDP address is not readable.
    Unreadable(u64),
    /// No `"RSD PTR "` signature at the RSDP address.
    BadRsdpSignature,
    /// RSDP checksum mismatch.
    BadRsdpChecksum,
    /// The RSDT/XSDT is unreadable, has the wrong signature or a bad checksum.
    BadRootTable,
}

fn checksum_ok(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)) == 0
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap_or([0; 4]))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap_or([0; 8]))
}

const HEADER_LEN: usize = 36;

/// Reads a whole SDT (header + body) at `phys` and checks its checksum.
fn read_table<M: PhysMemory + ?Sized>(mem: &M, phys: u64) -> Option<&[u8]> {
    let header = mem.read(phys, HEADER_LEN)?;
    let len = u32_at(header, 4) as usize;
    if len < HEADER_LEN {
        return None;
    }
    let table = mem.read(phys, len)?;
    checksum_ok(table).then_some(table)
}

/// Reads the ACPI tables reachable from the RSDP at `rsdp`.
pub fn parse<M: PhysMemory + ?Sized>(mem: &M, rsdp: u64) -> Result<AcpiInfo, AcpiError> {
    let r = mem.read(rsdp, 20).ok_or(AcpiError::Unreadable(rsdp))?;
    if &r[0..8] != b"RSD PTR " {
        return Err(AcpiError::BadRsdpSignature);
    }
    if !checksum_ok(r) {
        return Err(AcpiError::BadRsdpChecksum);
    }
    let mut info = AcpiInfo::EMPTY;
    info.revision = r[15];
    info.oem_id.copy_from_slice(&r[9..15]);
    let (root_phys, entry_len, root_sig): (u64, usize, &[u8; 4]) = if r[15] >= 2 {
        let r2 = mem.read(rsdp, 36).ok_or(AcpiError::Unreadable(rsdp))?;
        if !checksum_ok(r2) {
            return Err(AcpiError::BadRsdpChecksum);
        }
        (u64_at(r2, 24), 8, b"XSDT")
    } else {
        (u64::from(u32_at(r, 16)), 4, b"RSDT")
    };
    let root = read_table(mem, root_phys).ok_or(AcpiError::BadRootTable)?;
    if &root[0..4] != root_sig {
        return Err(AcpiError::BadRootTable);
    }
    let entries = (root.len() - HEADER_LEN) / entry_len;
    for i in 0..entries {
        let off = HEADER_LEN + i * entry_len;
        let phys = if entry_len == 8 {
            u64_at(root, off)
        } else {
            u64::from(u32_at(root, off))
        };
        let Some(table) = read_table(mem, phys) else {
            info.bad_tables += 1;
            continue;
        };
        if info.table_count < MAX_TABLES {
            info.signatures[info.table_count].copy_from_slice(&table[0..4]);
            info.table_count += 1;
        }
        match &table[0..4] {
            b"APIC" => parse_madt(table, &mut info),
            b"FACP" => parse_fadt(table, &mut info),
            b"HPET" if table.len() >= 52 => info.hpet = Some(u64_at(table, 44)),
            b"SRAT" if info.srat.is_none() => info.srat = Some(parse_srat(table)),
            _ => {}
        }
    }
    Ok(info)
}

fn parse_madt(t: &[u8], info: &mut AcpiInfo) {
    if t.len() < 44 {
        return;
    }
    info.has_madt = true;
    info.lapic_address = u64::from(u32_at(t, 36));
    info.has_8259 = u32_at(t, 40) & 1 != 0;
    let mut off = 44;
    while off + 2 <= t.len() {
        let kind = t[off];
        let len = t[off + 1] as usize;
        if len < 2 || off + len > t.len() {
            break;
        }
        let e = &t[off..off + len];
        match kind {
            // Processor local APIC.
            0 if len >= 8 => push_cpu(info, u32::from(e[3]), u32::from(e[2]), u32_at(e, 4)),
            // I/O APIC: id, reserved, address, GSI base.
            1 if len >= 12 => {
                if info.ioapic_count < MAX_IOAPICS {
                    info.ioapic_entries[info.ioapic_count] = IoApicEntry {
                        id: e[2],
                        address: u32_at(e, 4),
                        gsi_base: u32_at(e, 8),
                    };
                }
                info.ioapic_count += 1;
            }
            // Interrupt source override: bus, source, GSI, flags.
            2 if len >= 10 && info.override_count < MAX_OVERRIDES => {
                info.override_entries[info.override_count] = InterruptOverride {
                    bus: e[2],
                    source: e[3],
                    gsi: u32_at(e, 4),
                    flags: u16::from_le_bytes([e[8], e[9]]),
                };
                info.override_count += 1;
            }
            // Local APIC address override.
            5 if len >= 12 => info.lapic_address = u64_at(e, 4),
            // Processor local x2APIC.
            9 if len >= 16 => push_cpu(info, u32_at(e, 4), u32_at(e, 12), u32_at(e, 8)),
            _ => {}
        }
        off += len;
    }
}

fn push_cpu(info: &mut AcpiInfo, apic_id: u32, processor_uid: u32, flags: u32) {
    if info.cpu_count < MAX_ACPI_CPUS {
        info.cpus[info.cpu_count] = LocalApic {
            apic_id,
            processor_uid,
            enabled: flags & 1 != 0,
            online_capable: flags & 2 != 0,
        };
        info.cpu_count += 1;
    }
}

/// SRAT entries start after the header and 12 reserved bytes.
const SRAT_ENTRIES: usize = HEADER_LEN + 12;

/// Reads the SRAT's affinity entries (ACPI 6.5, 5.2.16): processor local APIC affinity (type 0,
/// 16 bytes: domain bits 0-7 at 2, APIC id at 3, flags at 4, domain bits 8-31 at 9), memory
/// affinity (type 1, 40 bytes: domain at 2, base at 8, length at 16, flags at 28) and processor
/// local x2APIC affinity (type 2, 24 bytes: domain at 4, x2APIC id at 8, flags at 12). Other
/// types (GICC, ITS, generic initiators) are passed over; an entry whose length is below 2 or
/// runs past the table ends the walk, as in the MADT.
fn parse_srat(t: &[u8]) -> Srat {
    let mut srat = Srat::EMPTY;
    let mut off = SRAT_ENTRIES;
    while off + 2 <= t.len() {
        let kind = t[off];
        let len = t[off + 1] as usize;
        if len < 2 || off + len > t.len() {
            srat.skipped += 1;
            break;
        }
        let e = &t[off..off + len];
        off += len;
        let (cpu, flags) = match kind {
            0 if len >= 16 => {
                let domain = u32::from(e[2]) | u32::from_le_bytes([e[9], e[10], e[11], 0]) << 8;
                let cpu = CpuAffinity {
                    apic_id: u32::from(e[3]),
                    domain,
                };
                (Some(cpu), u32_at(e, 4))
            }
            2 if len >= 24 => {
                let cpu = CpuAffinity {
                    apic_id: u32_at(e, 8),
                    domain: u32_at(e, 4),
                };
                (Some(cpu), u32_at(e, 12))
            }
            1 if len >= 40 => (None, u32_at(e, 28)),
            0..=2 => {
                srat.skipped += 1;
                continue;
            }
            _ => continue,
        };
        if flags & 1 == 0 {
            srat.disabled += 1;
            continue;
        }
        if let Some(cpu) = cpu {
            if srat.cpu_count < MAX_ACPI_CPUS {
                srat.cpu_entries[srat.cpu_count] = cpu;
                srat.cpu_count += 1;
            } else {
                srat.skipped += 1;
            }
            continue;
        }
        let (base, length) = (u64_at(e, 8), u64_at(e, 16));
        if length == 0 || base.checked_add(length).is_none() || srat.memory_count == MAX_SRAT_MEMORY
        {
            srat.skipped += 1;
            continue;
        }
        srat.memory_entries[srat.memory_count] = MemoryAffinity {
            base,
            length,
            domain: u32_at(e, 2),
            hot_pluggable: flags & 2 != 0,
            non_volatile: flags & 4 != 0,
        };
        srat.memory_count += 1;
    }
    srat
}

fn parse_fadt(t: &[u8], info: &mut AcpiInfo) {
    if t.len() >= 116 {
        info.hw_reduced = u32_at(t, 112) & (1 << 20) != 0;
    }
    let ext32 = t.len() >= 116 && u32_at(t, 112) & (1 << 8) != 0;
    // X_PM_TMR_BLK (generic address structure at 208, system I/O space = 1), else PM_TMR_BLK.
    let mut port = 0u64;
    if t.len() >= 220 && t[208] == 1 {
        port = u64_at(t, 212);
    }
    if port == 0 && t.len() >= 80 {
        port = u64::from(u32_at(t, 76));
    }
    let len_ok = t.len() < 92 || t[91] >= 4;
    if port != 0 && port <= u64::from(u16::MAX) && len_ok && !info.hw_reduced {
        info.pm_timer = Some(PmTimer {
            port: port as u16,
            ext32,
        });
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    /// A fake physical memory: one buffer starting at `base`.
    struct Mem {
        base: u64,
        bytes: Vec<u8>,
    }

    impl PhysMemory for Mem {
        fn read(&self, phys: u64, len: usize) -> Option<&[u8]> {
            let start = phys.checked_sub(self.base)? as usize;
            self.bytes.get(start..start.checked_add(len)?)
        }
    }

    fn fix_checksum(bytes: &mut [u8], at: usize) {
        bytes[at] = 0;
        let sum = bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        bytes[at] = 0u8.wrapping_sub(sum);
    }

    fn sdt(sig: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(sig);
        t.extend_from_slice(&((HEADER_LEN + body.len()) as u32).to_le_bytes());
        t.push(1); // revision
        t.push(0); // checksum
        t.extend_from_slice(b"TESTOE");
        t.extend_from_slice(b"TESTTABL");
        t.extend_from_slice(&[0; 12]);
        t.extend_from_slice(body);
        fix_checksum(&mut t, 9);
        t
    }

    fn madt() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0xFEE0_0000u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes()); // PCAT_COMPAT
        for (uid, id, flags) in [(0u8, 0u8, 1u32), (1, 2, 1), (2, 4, 0), (3, 6, 3)] {
            b.extend_from_slice(&[0, 8, uid, id]);
            b.extend_from_slice(&flags.to_le_bytes());
        }
        b.extend_from_slice(&[1, 12, 0, 0, 0, 0, 0xC0, 0xFE, 0, 0, 0, 0]); // I/O APIC
                                                                           // x2APIC entry: id 300, flags enabled, uid 9.
        b.extend_from_slice(&[9, 16, 0, 0]);
        b.extend_from_slice(&300u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&9u32.to_le_bytes());
        sdt(b"APIC", &b)
    }

    fn fadt(pm_port: u32, flags: u32) -> Vec<u8> {
        let mut body = std::vec![0u8; 244 - HEADER_LEN];
        body[76 - HEADER_LEN..80 - HEADER_LEN].copy_from_slice(&pm_port.to_le_bytes());
        body[91 - HEADER_LEN] = 4;
        body[112 - HEADER_LEN..116 - HEADER_LEN].copy_from_slice(&flags.to_le_bytes());
        sdt(b"FACP", &body)
    }

    /// Lays out RSDP (rev 2) + XSDT + the given tables at 0x1000.., returns memory and RSDP.
    fn build(tables: &[Vec<u8>], xsdt: bool) -> (Mem, u64) {
        let base = 0x1000u64;
        let mut bytes = std::vec![0u8; 64];
        let mut addrs = Vec::new();
        for t in tables {
            addrs.push(base + bytes.len() as u64);
            bytes.extend_from_slice(t);
        }
        let root_addr = base + bytes.len() as u64;
        let root = if xsdt {
            let body: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
            sdt(b"XSDT", &body)
        } else {
            let body: Vec<u8> = addrs
                .iter()
                .flat_map(|a| (*a as u32).to_le_bytes())
                .collect();
            sdt(b"RSDT", &body)
        };
        bytes.extend_from_slice(&root);
        let r = &mut bytes[0..36];
        r[0..8].copy_from_slice(b"RSD PTR ");
        r[9..15].copy_from_slice(b"BOCHS ");
        if xsdt {
            r[15] = 2;
            r[20..24].copy_from_slice(&36u32.to_le_bytes());
            r[24..32].copy_from_slice(&root_addr.to_le_bytes());
        } else {
            r[16..20].copy_from_slice(&(root_addr as u32).to_le_bytes());
        }
        fix_checksum(&mut r[0..20], 8);
        fix_checksum(&mut r[0..36], 32);
        (Mem { base, bytes }, base)
    }

    #[test]
    fn madt_lists_enabled_cpus() {
        let (mem, rsdp) = build(&[madt(), fadt(0x608, 1 << 8)], true);
        let info = parse(&mem, rsdp).unwrap();
        assert_eq!(info.revision, 2);
        assert!(info.has_madt && info.has_8259);
        assert_eq!(info.lapic_address, 0xFEE0_0000);
        assert_eq!(info.cpu_count, 5);
        let ids: Vec<u32> = info.enabled_cpus().map(|c| c.apic_id).collect();
        assert_eq!(ids, [0, 2, 6, 300]);
        assert!(info.cpus()[3].online_capable);
        assert_eq!(info.ioapic_count, 1);
        assert_eq!(
            info.pm_timer,
            Some(PmTimer {
                port: 0x608,
                ext32: true
            })
        );
        assert_eq!(info.table_names().collect::<Vec<_>>(), ["APIC", "FACP"]);
    }

    #[test]
    fn rsdt_and_hw_reduced() {
        let (mem, rsdp) = build(&[fadt(0x608, 1 << 20), madt()], false);
        let info = parse(&mem, rsdp).unwrap();
        assert_eq!(info.revision, 0);
        assert!(info.hw_reduced);
        assert_eq!(info.pm_timer, None);
        assert_eq!(info.enabled_cpus().count(), 4);
    }

    #[test]
    fn bad_checksums() {
        let mut bad_madt = madt();
        bad_madt[50] ^= 0xFF;
        let (mem, rsdp) = build(&[bad_madt, fadt(0xb008, 0)], true);
        let info = parse(&mem, rsdp).unwrap();
        assert_eq!(info.bad_tables, 1);
        assert!(!info.has_madt);
        assert_eq!(
            info.pm_timer,
            Some(PmTimer {
                port: 0xb008,
                ext32: false
            })
        );

        let (mut mem, rsdp) = build(&[madt()], true);
        mem.bytes[8] ^= 1;
        assert_eq!(parse(&mem, rsdp).unwrap_err(), AcpiError::BadRsdpChecksum);
        mem.bytes[0] = b'X';
        assert_eq!(parse(&mem, rsdp).unwrap_err(), AcpiError::BadRsdpSignature);
        assert_eq!(parse(&mem, 0x10).unwrap_err(), AcpiError::Unreadable(0x10));
    }

    #[test]
    fn ioapics_and_overrides() {
        let mut b = Vec::new();
        b.extend_from_slice(&0xFEE0_0000u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        // Two I/O APICs as on `-M microvm`: id 0 at 0xFEC00000 (GSI 0..), id 1 at 0xFEC10000
        // (GSI 24..).
        b.extend_from_slice(&[1, 12, 0, 0]);
        b.extend_from_slice(&0xFEC0_0000u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&[1, 12, 1, 0]);
        b.extend_from_slice(&0xFEC1_0000u32.to_le_bytes());
        b.extend_from_slice(&24u32.to_le_bytes());
        // ISA IRQ 0 -> GSI 2 (flags 0: conforms), IRQ 9 -> GSI 9 level, active high (0xD).
        b.extend_from_slice(&[2, 10, 0, 0]);
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&[2, 10, 0, 9]);
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&0xDu16.to_le_bytes());
        let (mem, rsdp) = build(&[sdt(b"APIC", &b)], true);
        let info = parse(&mem, rsdp).unwrap();
        assert_eq!(info.ioapic_count, 2);
        assert_eq!(
            info.ioapics(),
            [
                IoApicEntry {
                    id: 0,
                    address: 0xFEC0_0000,
                    gsi_base: 0
                },
                IoApicEntry {
                    id: 1,
                    address: 0xFEC1_0000,
                    gsi_base: 24
                }
            ]
        );
        assert_eq!(info.overrides().len(), 2);
        assert_eq!(info.isa_irq(0), (2, Polarity::ActiveHigh, Trigger::Edge));
        assert_eq!(info.isa_irq(9), (9, Polarity::ActiveHigh, Trigger::Level));
        assert_eq!(info.isa_irq(4), (4, Polarity::ActiveHigh, Trigger::Edge));
        assert_eq!(info.isa_source_of(2).map(|o| o.source), Some(0));
        assert!(info.isa_source_of(0).is_none());
        let low = InterruptOverride {
            flags: 0b1111,
            ..Default::default()
        };
        assert_eq!(low.polarity(), Some(Polarity::ActiveLow));
        assert_eq!(low.trigger(), Some(Trigger::Level));
    }

    fn srat_cpu(apic_id: u8, domain: u32, flags: u32) -> Vec<u8> {
        let d = domain.to_le_bytes();
        let mut e = std::vec![0, 16, d[0], apic_id];
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&[0, d[1], d[2], d[3]]);
        e.extend_from_slice(&0u32.to_le_bytes()); // clock domain
        e
    }

    fn srat_x2apic(apic_id: u32, domain: u32, flags: u32) -> Vec<u8> {
        let mut e = std::vec![2, 24, 0, 0];
        e.extend_from_slice(&domain.to_le_bytes());
        e.extend_from_slice(&apic_id.to_le_bytes());
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&[0; 8]);
        e
    }

    fn srat_memory(base: u64, length: u64, domain: u32, flags: u32) -> Vec<u8> {
        let mut e = std::vec![1, 40];
        e.extend_from_slice(&domain.to_le_bytes());
        e.extend_from_slice(&[0; 2]);
        e.extend_from_slice(&base.to_le_bytes());
        e.extend_from_slice(&length.to_le_bytes());
        e.extend_from_slice(&[0; 4]);
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&[0; 8]);
        e
    }

    fn srat(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut body = std::vec![0u8; 12];
        body[0] = 1; // reserved, 1 for compatibility
        for e in entries {
            body.extend_from_slice(e);
        }
        sdt(b"SRAT", &body)
    }

    /// The SRAT QEMU's `-M pc` builds for two nodes of 128 MiB with cores 0-1 and 2-3: the
    /// first node's memory in two ranges (below and above 640 KiB), disabled padding.
    fn qemu_like_srat() -> Vec<u8> {
        const MIB: u64 = 1 << 20;
        srat(&[
            srat_cpu(0, 0, 1),
            srat_cpu(1, 0, 1),
            srat_cpu(2, 1, 1),
            srat_cpu(3, 1, 1),
            srat_memory(0, 0xA_0000, 0, 1),
            srat_memory(MIB, 127 * MIB, 0, 1),
            srat_memory(128 * MIB, 128 * MIB, 1, 1),
            srat_memory(0, 0, 0, 0),
            srat_memory(0, 0, 0, 0),
        ])
    }

    #[test]
    fn srat_gives_cpu_and_memory_domains() {
        let (mem, rsdp) = build(&[madt(), qemu_like_srat()], true);
        let info = parse(&mem, rsdp).unwrap();
        let srat = info.srat.unwrap();
        assert_eq!(srat.cpus().len(), 4);
        assert_eq!(srat.memory().len(), 3);
        assert_eq!(srat.disabled, 2);
        assert_eq!(srat.skipped, 0);
        assert_eq!(srat.domain_count(), 2);
        assert_eq!(
            (0..4).map(|a| srat.domain_of_apic(a)).collect::<Vec<_>>(),
            [Some(0), Some(0), Some(1), Some(1)]
        );
        assert_eq!(srat.domain_of_apic(7), None);
        assert_eq!(srat.domain_of_address(0x9_F000), Some(0));
        assert_eq!(
            srat.domain_of_address(0xB_0000),
            None,
            "the hole below 1 MiB"
        );
        assert_eq!(srat.domain_of_address((128 << 20) - 1), Some(0));
        assert_eq!(srat.domain_of_address(128 << 20), Some(1));
        assert_eq!(srat.domain_of_address(256 << 20), None);
        assert_eq!(info.table_names().collect::<Vec<_>>(), ["APIC", "SRAT"]);
    }

    #[test]
    fn srat_flags_x2apic_and_wide_domains() {
        let t = srat(&[
            // Disabled processors are left out, enabled ones kept with 32-bit domains.
            srat_cpu(0, 0x0102_0304, 1),
            srat_cpu(1, 5, 0),
            srat_x2apic(300, 9, 1),
            srat_x2apic(301, 9, 0),
            // Hot-pluggable and non-volatile ranges are kept and say so; a disabled one not.
            srat_memory(0x1_0000_0000, 1 << 30, 9, 1 | 2),
            srat_memory(0x2_0000_0000, 1 << 30, 3, 1 | 4),
            srat_memory(0x3_0000_0000, 1 << 30, 4, 2),
            // An unknown type (GICC affinity) is passed over.
            std::vec![3, 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ]);
        let (mem, rsdp) = build(&[t], true);
        let srat = parse(&mem, rsdp).unwrap().srat.unwrap();
        assert_eq!(
            srat.cpus(),
            [
                CpuAffinity {
                    apic_id: 0,
                    domain: 0x0102_0304
                },
                CpuAffinity {
                    apic_id: 300,
                    domain: 9
                }
            ]
        );
        assert_eq!(srat.disabled, 3);
        assert_eq!(srat.skipped, 0);
        let m = srat.memory();
        assert_eq!(m.len(), 2);
        assert!(m[0].hot_pluggable && !m[0].non_volatile);
        assert!(!m[1].hot_pluggable && m[1].non_volatile);
        assert_eq!(srat.domain_of_address(0x1_4000_0000 - 1), Some(9));
        assert_eq!(srat.domain_of_address(0x3_0000_0000), None);
        assert_eq!(srat.domain_count(), 3);
    }

    #[test]
    fn malformed_srat_entries_are_skipped_and_counted() {
        let mut short_cpu = srat_cpu(0, 0, 1);
        short_cpu[1] = 8;
        short_cpu.truncate(8);
        let mut entries = std::vec![
            short_cpu,
            srat_memory(0x1000, 0, 0, 1),                // empty
            srat_memory(u64::MAX - 0xFFF, 0x2000, 0, 1), // wraps
            srat_memory(0x10_0000, 0x10_0000, 0, 1),
        ];
        // More ranges than the table keeps.
        for i in 0..MAX_SRAT_MEMORY as u64 {
            entries.push(srat_memory((i + 2) << 20, 1 << 20, 1, 1));
        }
        // A zero length ends the walk.
        entries.push(std::vec![0, 0, 0, 0]);
        entries.push(srat_cpu(5, 1, 1));
        let (mem, rsdp) = build(&[srat(&entries)], true);
        let srat = parse(&mem, rsdp).unwrap().srat.unwrap();
        assert_eq!(srat.memory().len(), MAX_SRAT_MEMORY);
        assert_eq!(srat.memory()[0].base, 0x10_0000);
        assert_eq!(srat.cpus().len(), 0);
        assert_eq!(srat.skipped, 3 + 1 + 1);
    }

    #[test]
    fn srat_with_bad_checksum_is_ignored() {
        let mut t = qemu_like_srat();
        t[60] ^= 0x55;
        let (mem, rsdp) = build(&[madt(), t], true);
        let info = parse(&mem, rsdp).unwrap();
        assert!(info.srat.is_none());
        assert_eq!(info.bad_tables, 1);
        assert!(info.has_madt);
        // A table too short for any entry is an SRAT with nothing in it.
        let (mem, rsdp) = build(&[sdt(b"SRAT", &[1, 0, 0, 0])], true);
        let srat = parse(&mem, rsdp).unwrap().srat.unwrap();
        assert_eq!((srat.cpus().len(), srat.memory().len()), (0, 0));
    }

    #[test]
    fn truncated_madt_entries_stop_parsing() {
        let mut b = Vec::new();
        b.extend_from_slice(&0xFEE0_0000u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&[0, 8, 0, 0, 1, 0, 0, 0]);
        b.extend_from_slice(&[0, 0, 1, 1]); // length 0: malformed
        let (mem, rsdp) = build(&[sdt(b"APIC", &b)], true);
        let info = parse(&mem, rsdp).unwrap();
        assert_eq!(info.cpu_count, 1);
    }
}
