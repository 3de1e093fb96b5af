//! Builds the kernel object for one locking strategy and the initial system (see
//! [`image_common::system`]) on ARMv7-A, then starts scheduling.

use hal_armv7::paging;
use hal_armv7::{println, usermode, ArmHal};
use image_common::cmdline::Config;
use image_common::debugcalls::{self as calls, DebugArch};
use image_common::Arch;
use kernel::{Kernel, Strategy, ThreadId};

use crate::boot::{fail, TIMER_HZ};
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

    fn println(&self, args: core::fmt::Arguments<'_>) {
        println!("{args}");
    }

    fn fail(&self, args: core::fmt::Arguments<'_>) -> ! {
        fail(args)
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
    // SAFETY: called once, by the boot core before any other core runs kernel code.
    let k = unsafe { image_common::place_kernel(Kernel::new(strategy, ArmHal, cfg.cores)) };
    // `trace=1` (the command line refused it unless the image has the `trace` feature).
    image_common::trace::install(k, cfg.trace);
    // `fastpath=0` (on by default).
    k.set_fastpath(cfg.fastpath);
    println!(
        "kernel: {} strategy on {} cores, {} KiB kernel object, IPC fastpath {}",
        k.strategy().name(),
        cfg.cores,
        core::mem::size_of::<Kernel<S, ArmHal>>() / 1024,
        if cfg.fastpath { "on" } else { "off" }
    );
    let elf = match crate::loader::parse(USER_ELF) {
        Ok(e) => e,
        Err(e) => fail(format_args!("user ELF: {e:?}")),
    };
    let setup = cfg.setup(Armv7::counter().hz, crate::selftest::USER_ERROR_TESTS);
    let (root, plan) = image_common::build(&Armv7 { elf }, k, setup);

    calls::init::<Armv7>(cfg.run(crate::selftest::KERNEL_TESTS), root, plan);
    calls::skip_pager_test_if_left_out::<Armv7>(&cfg);
    let k: &'static Kernel<S, ArmHal> = k;
    usermode::USER.install(k, calls::handle::<Armv7>);
    if cfg.bench.is_none() {
        ArmHal::timer_start(TIMER_HZ);
    }
    usermode::USER.run()
}
