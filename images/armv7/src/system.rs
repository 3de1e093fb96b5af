//! The ARMv7-A side of building the initial system ([`image_common::system`]): the HAL, the
//! user ELF this image accepts and the device memory user drivers may own.

use hal_armv7::paging;
use hal_armv7::ArmHal;
use image_common::Machine;

use image_common::elf::ElfTarget;

/// The ARMv7-A machines this image runs on (and their side of the debug calls, see
/// [`crate::debugcalls`]).
pub struct Armv7;

/// This image's system builder and debug calls.
pub type System = image_common::System<Armv7>;

impl Machine for Armv7 {
    type Hal = ArmHal;
    const ELF: ElfTarget = ElfTarget::native(
        40,
        kernel::config::USER_TOP as u64,
        paging::PAGE_SIZE as u64,
    );

    fn device_regions() -> &'static [(u64, u64)] {
        hal_armv7::machine::Machine::from_midr(hal_armv7::cpu::midr())
            .map_or(&[], |m| m.user_devices())
    }
}
