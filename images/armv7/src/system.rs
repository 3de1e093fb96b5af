//! The ARMv7-A side of building the initial system ([`image_common::system`]): the HAL, the
//! user ELF this image accepts and the device memory user drivers may own.

use hal_armv7::paging;
use hal_armv7::ArmHal;
use image_common::Arch;

use image_common::elf::{Elf, ElfTarget};

/// The ARMv7-A side of building the initial system (and of the debug calls, see
/// [`crate::debugcalls`]).
pub struct Armv7 {
    elf: Elf,
}

impl Arch for Armv7 {
    type Hal = ArmHal;
    const ELF: ElfTarget = ElfTarget {
        class64: false,
        machine: 40,
        user_top: kernel::config::USER_TOP as u64,
        page_size: paging::PAGE_SIZE as u64,
    };

    fn from_elf(elf: Elf) -> Self {
        Self { elf }
    }

    fn elf(&self) -> &Elf {
        &self.elf
    }

    fn device_regions(&self) -> &'static [(u64, u64)] {
        hal_armv7::machine::Machine::from_midr(hal_armv7::cpu::midr())
            .map_or(&[], |m| m.user_devices())
    }
}
