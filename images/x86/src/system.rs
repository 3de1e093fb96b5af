//! The x86_64 side of building the initial system ([`image_common::system`]): the HAL, the
//! user ELF this image accepts and the device memory user drivers may own, and the ACPI SRAT's memory nodes.

use hal_x86::paging;
use hal_x86::{println, X86Hal};
use image_common::numa::{Firmware, MAX_FIRMWARE_RANGES};
use image_common::Machine;
use servers::image::memory::NumaSource;

use image_common::elf::ElfTarget;

/// The x86_64 machines this image runs on (and their side of the debug calls, see
/// [`crate::debugcalls`]).
pub struct X86;

/// This image's system builder and debug calls.
pub type System = image_common::System<X86>;

impl Machine for X86 {
    type Hal = X86Hal;
    const ELF: ElfTarget = ElfTarget::native(62, 1 << 46, paging::PAGE_SIZE);

    fn device_regions() -> &'static [(u64, u64)] {
        // What user drivers may own on QEMU's x86 machines: the virtio-mmio window of
        // `-M microvm` (24 transports of 512 bytes at 0xFEB0_0000) and the HPET's registers
        // (unused by this kernel, which calibrates with CPUID 0x15, the PM timer or the PIT).
        // Never the local APIC (0xFEE0_0000) or the I/O APIC (0xFEC0_0000): the kernel's.
        const DEVICES: [(u64, u64); 2] = [(0xFEB0_0000, 0xFEB0_4000), (0xFED0_0000, 0xFED0_1000)];
        &DEVICES
    }

    fn numa(cores: usize) -> Option<Firmware> {
        let srat = hal_x86::srat()?;
        let mut fw = Firmware::new(NumaSource::Srat);
        for (c, d) in fw.core_domain.iter_mut().enumerate().take(cores) {
            *d = hal_x86::numa_domain(c);
        }
        for m in hal_x86::numa_memory() {
            if !fw.push_range(m.base, m.end(), m.domain) {
                println!(
                    "boot: srat: more memory ranges than {MAX_FIRMWARE_RANGES}, the rest left out"
                );
                break;
            }
        }
        // Entries the reader left out: say so (they may be why a description is unusable).
        if srat.skipped > 0 {
            println!("boot: srat: {} malformed entries skipped", srat.skipped);
        }
        Some(fw)
    }
}
