//! Builds the kernel object for one locking strategy and the initial system (see
//! [`image_common::system`]) on ARMv7-A, then starts scheduling.

use hal_armv7::paging;
use hal_armv7::{usermode, ArmHal};
use image_common::cmdline::Config;
use image_common::Arch;
use kernel::{Strategy, ThreadId};

use crate::boot::fail;
use crate::loader::{Elf, ElfError};

/// The user ELF built by `build.rs`.
static USER_ELF: &[u8] = include_bytes!(env!("USER_ELF"));

/// The ARMv7-A side of building the initial system (and of the debug calls, see
/// [`crate::debugcalls`]).
pub struct Armv7 {
    elf: Elf,
}

impl Arch for Armv7 {
    type Hal = ArmHal;
    type Error = ElfError;

    fn new_address_space(&self) -> Option<u64> {
        paging::new_address_space()
    }

    fn load_user(&self, root: u64) -> Result<(), ElfError> {
        crate::loader::load_into(&self.elf, root)
    }

    fn map_stack(&self, root: u64, top: u64, size: u64) -> Result<(), ElfError> {
        crate::loader::map_stack(root, top, size)
    }

    unsafe fn set_initial_context(&self, t: ThreadId, sp: u64, args: [u64; 3]) {
        // SAFETY: the caller's contract (`t` has not run; entry and stack mapped). The stack
        // pointer the builder passes is 8-byte aligned, as AAPCS wants at a call; user
        // addresses and arguments fit the 32-bit registers.
        unsafe {
            usermode::USER.set_initial_context(
                t,
                self.elf.entry as usize,
                sp as usize,
                args.map(|a| a as usize),
            )
        };
    }

    fn alloc_frame(&self) -> Option<u64> {
        paging::alloc_frame()
    }

    fn take_free_ram(&self, out: &mut [(u64, u64)]) -> usize {
        paging::take_free_ram(out)
    }

    fn device_regions(&self) -> &'static [(u64, u64)] {
        hal_armv7::machine::Machine::from_midr(hal_armv7::cpu::midr())
            .map_or(&[], |m| m.user_devices())
    }

    fn frames_allocated(&self) -> u64 {
        paging::frames_allocated() as u64
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
        image_common::boot::start(strategy, cfg, &usermode::USER, tests, || {
            match crate::loader::parse(USER_ELF) {
                Ok(elf) => Armv7 { elf },
                Err(e) => fail(format_args!("user ELF: {e:?}")),
            }
        })
    }
}
