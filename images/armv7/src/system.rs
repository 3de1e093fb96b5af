//! Builds the kernel object for one locking strategy and the initial system (see
//! [`image_common::system`]) on ARMv7-A, then starts scheduling.

use hal_armv7::paging;
use hal_armv7::{usermode, ArmHal};
use image_common::cmdline::Config;
use image_common::Arch;
use kernel::Strategy;

use crate::boot::fail;
use image_common::elf::{Elf, ElfTarget};

/// The user ELF built by `build.rs`.
static USER_ELF: &[u8] = include_bytes!(env!("USER_ELF"));

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

    fn elf(&self) -> &Elf {
        &self.elf
    }

    fn device_regions(&self) -> &'static [(u64, u64)] {
        hal_armv7::machine::Machine::from_midr(hal_armv7::cpu::midr())
            .map_or(&[], |m| m.user_devices())
    }
}

/// This image, for [`image_common::strategy::boot_with`].
pub struct Image;

impl image_common::strategy::Boot for Image {
    fn boot<S: Strategy + 'static>(self, strategy: S, cfg: Config) -> ! {
        boot(strategy, cfg)
    }
}

/// Builds the kernel with `strategy` and the initial system, starts scheduling on this core.
pub fn boot<S: Strategy + 'static>(strategy: S, cfg: Config) -> ! {
    let tests = (
        crate::selftest::KERNEL_TESTS,
        crate::selftest::USER_ERROR_TESTS,
    );
    // SAFETY: `strategy::boot_with` calls this once, on the boot core before any other core
    // runs kernel code.
    unsafe {
        image_common::boot::start(
            strategy,
            cfg,
            &usermode::USER,
            tests,
            || match Armv7::parse_elf(USER_ELF) {
                Ok(elf) => Armv7 { elf },
                Err(e) => fail(format_args!("user ELF: {e:?}")),
            },
        )
    }
}
