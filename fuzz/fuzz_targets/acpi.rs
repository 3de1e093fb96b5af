//! The x86_64 ACPI table reader (`hal_x86::acpi`: RSDP, RSDT/XSDT, MADT, FADT, HPET, SRAT).
//! Checks that parsing never panics and that what it reports stays within its fixed arrays,
//! and exercises every query of the result (ISA IRQ routing, SRAT domains).
//!
//! Every table's checksum is verified before its contents are read, which random bytes almost
//! never pass; so the input is a list of tables that the target lays out behind a valid RSDP
//! and root table, fixing each table's checksum (and, unless asked not to, its length field).
//! Input: a flags byte (bit 0: the input is raw memory with the RSDP at its start, no layout;
//! bit 1: ACPI 1.0, an RSDP of revision 0 with an RSDT, else revision 2 with an XSDT; bit 2:
//! keep the tables' own length fields), then tables, each a 2-byte little-endian length and
//! that many bytes.
#![no_main]

use hal_x86::acpi::{parse, PhysMemory, MAX_ACPI_CPUS, MAX_IOAPICS, MAX_OVERRIDES, MAX_TABLES};
use libfuzzer_sys::fuzz_target;

/// Where the fake physical memory starts.
const BASE: u64 = 0x1000;
/// The header of every ACPI table (SDT).
const HEADER_LEN: usize = 36;
/// The RSDP of revision 2 (the first 20 bytes are revision 0's).
const RSDP_LEN: usize = 36;

/// Physical memory: one buffer at [`BASE`].
struct Mem(Vec<u8>);

impl PhysMemory for Mem {
    fn read(&self, phys: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(phys.checked_sub(BASE)?).ok()?;
        self.0.get(start..start.checked_add(len)?)
    }
}

/// Sets `bytes[at]` so that the sum of `bytes` is zero.
fn fix_checksum(bytes: &mut [u8], at: usize) {
    bytes[at] = 0;
    let sum = bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b));
    bytes[at] = 0u8.wrapping_sub(sum);
}

/// An SDT with signature `sig` and body `body`, its length and checksum set.
fn sdt(sig: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(HEADER_LEN + body.len());
    t.extend_from_slice(sig);
    t.extend_from_slice(&((HEADER_LEN + body.len()) as u32).to_le_bytes());
    t.extend_from_slice(&[1, 0]);
    t.extend_from_slice(b"FUZZOEFUZZTABL");
    t.extend_from_slice(&[0; 12]);
    t.extend_from_slice(body);
    fix_checksum(&mut t, 9);
    t
}

/// Lays out the RSDP, the tables and the root table listing them.
fn layout(flags: u8, mut rest: &[u8]) -> Vec<u8> {
    let (acpi1, own_lengths) = (flags & 2 != 0, flags & 4 != 0);
    let mut mem = vec![0u8; RSDP_LEN];
    let mut addrs = Vec::new();
    while rest.len() >= 2 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let mut table = rest[2..2 + len].to_vec();
        rest = &rest[2 + len..];
        if table.len() >= 8 && !own_lengths {
            table[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        }
        if table.len() >= 10 {
            fix_checksum(&mut table, 9);
        }
        // Tables start 8-byte aligned, as firmware places them.
        mem.resize(mem.len().next_multiple_of(8), 0);
        addrs.push(BASE + mem.len() as u64);
        mem.extend_from_slice(&table);
    }
    mem.resize(mem.len().next_multiple_of(8), 0);
    let root_addr = BASE + mem.len() as u64;
    let root = if acpi1 {
        let body: Vec<u8> = addrs
            .iter()
            .flat_map(|&a| (a as u32).to_le_bytes())
            .collect();
        sdt(b"RSDT", &body)
    } else {
        let body: Vec<u8> = addrs.iter().flat_map(|&a| a.to_le_bytes()).collect();
        sdt(b"XSDT", &body)
    };
    mem.extend_from_slice(&root);
    let rsdp = &mut mem[..RSDP_LEN];
    rsdp[..8].copy_from_slice(b"RSD PTR ");
    rsdp[9..15].copy_from_slice(b"FUZZOE");
    rsdp[15] = if acpi1 { 0 } else { 2 };
    rsdp[16..20].copy_from_slice(&(root_addr as u32).to_le_bytes());
    rsdp[20..24].copy_from_slice(&(RSDP_LEN as u32).to_le_bytes());
    rsdp[24..32].copy_from_slice(&root_addr.to_le_bytes());
    fix_checksum(&mut rsdp[..20], 8);
    fix_checksum(rsdp, 32);
    mem
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mem = if flags & 1 != 0 {
        Mem(rest.to_vec())
    } else {
        Mem(layout(flags, rest))
    };
    let Ok(info) = parse(&mem, BASE) else {
        return;
    };
    assert!(info.table_count <= MAX_TABLES);
    assert_eq!(info.table_names().count(), info.table_count);
    assert!(info.cpus().len() == info.cpu_count && info.cpu_count <= MAX_ACPI_CPUS);
    assert!(info.ioapics().len() == info.ioapic_count.min(MAX_IOAPICS));
    assert!(info.overrides().len() == info.override_count && info.override_count <= MAX_OVERRIDES);
    assert!(info.enabled_cpus().count() <= info.cpu_count);
    for irq in 0..16 {
        let (gsi, _, _) = info.isa_irq(irq);
        let _ = info.isa_source_of(gsi);
    }
    if let Some(srat) = &info.srat {
        assert!(srat.domain_count() <= srat.cpus().len() + srat.memory().len());
        for cpu in srat.cpus() {
            assert!(srat.domain_of_apic(cpu.apic_id).is_some());
        }
        for m in srat.memory() {
            let _ = srat.domain_of_address(m.base);
        }
    }
});
