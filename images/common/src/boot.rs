//! The boot sequence's architecture-neutral part, for any HAL implementing
//! [`hal_common::ArchHal`]: the boot core's steps once the other cores were started (the
//! `cpus online` and `lock:` lines, the cores the kernel uses, benchmark mode), the other cores'
//! wait for the root task's release, and the kernel's start on the boot core ([`Start`]).
//!
//! The images keep what their machines do differently: the boot banner, the memory map and
//! firmware tables, how the other cores start and the in-kernel self-tests.

use core::fmt::Arguments;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hal_common::usermode::{UserArch, UserMode};
use hal_common::ArchHal;
use kernel::config::MAX_CPUS;
use kernel::{Kernel, Strategy};

use crate::cmdline::{Cmdline, Config};
use crate::debugcalls::{self as calls, DebugArch};
use crate::lockcost::KernelLockOf;
use crate::strategy::{Boot, CnaNodes, KernelNuma};
use crate::Arch;

/// Timer interrupts per second on every core (round-robin among equal priorities).
pub const TIMER_HZ: u32 = 100;

/// Set in benchmark mode: no tick timer on any core (nothing to preempt, and a tick would land
/// in samples).
pub static BENCH_MODE: AtomicBool = AtomicBool::new(false);

/// Set by the root task (debug call RELEASE): the other cores may enter the scheduler.
pub static RELEASED: AtomicBool = AtomicBool::new(false);
/// Cores the kernel uses (cores with a higher index stay parked).
pub static KERNEL_CORES: AtomicUsize = AtomicUsize::new(1);

/// Stops with the failure status after a message.
pub fn fail<H: ArchHal>(args: Arguments<'_>) -> ! {
    H::println(format_args!("boot: FAILED: {args}"));
    H::exit(false)
}

/// Parses the kernel command line, whose `key=value` pairs `value` looks up; stops the boot
/// with the parser's message on a bad one.
pub fn parse_cmdline<H: ArchHal>(value: impl Fn(&str) -> Option<&'static str>) -> Cmdline {
    match Cmdline::parse(value) {
        Ok(c) => c,
        Err(e) => fail::<H>(format_args!("{e}")),
    }
}

/// The boot core's steps once the other cores were started (`online` of them up, `failed` that
/// did not start): prints `cpus online: N` (and stops if a core failed), chooses the cores the
/// kernel runs on (the others stay parked), prints the `lock:` line (with `rtm_note` after the
/// lock's description when `lock=rtm` and the architecture has none) and returns the run's
/// configuration, with [`BENCH_MODE`] set for a benchmark.
pub fn configure<H: ArchHal>(
    cmdline: &Cmdline,
    online: usize,
    failed: usize,
    rtm_note: Option<&str>,
) -> Config {
    H::println(format_args!("cpus online: {online}"));
    if failed > 0 {
        fail::<H>(format_args!("{failed} core(s) did not start"));
    }
    let cores = cmdline.cores(online, MAX_CPUS);
    if online > MAX_CPUS {
        H::println(format_args!(
            "boot: the kernel is built for {MAX_CPUS} cores; cores {MAX_CPUS}.. stay parked"
        ));
    }
    if cores < online.min(MAX_CPUS) {
        H::println(format_args!(
            "boot: cpus={cores} on the command line: cores {cores}.. stay parked"
        ));
    }
    KERNEL_CORES.store(cores, Ordering::Release);
    let lock = cmdline.lock;
    match rtm_note {
        // `kernel_locks::Rtm` detects at run time that there is no transactional memory and
        // always takes its fallback lock.
        Some(note) if lock == crate::cmdline::LockChoice::Rtm => H::println(format_args!(
            "lock: {} ({}; {note})",
            lock.name(),
            lock.describe()
        )),
        _ => H::println(format_args!("lock: {} ({})", lock.name(), lock.describe())),
    }
    let cfg = match cmdline.on_cores(cores) {
        Ok(cfg) => cfg,
        Err(e) => fail::<H>(format_args!("{e}")),
    };
    if cfg.cmdline.bench.is_some() {
        BENCH_MODE.store(true, Ordering::Release);
    }
    cfg
}

/// The boot core's steps once the other cores were started (`online` of them up, `failed` that
/// did not start): the run's configuration ([`configure`], with `rtm_note`), `prepare` with it
/// (what the image does before the kernel starts: its self-tests that need every core, what
/// benchmark mode needs), then `image` booted with the strategy the command line names.
pub fn run<A: Arch + DebugArch, U: UserArch, const CPUS: usize>(
    cmdline: &Cmdline,
    (online, failed): (usize, usize),
    rtm_note: Option<&str>,
    prepare: impl FnOnce(&Config),
    image: Start<A, U, CPUS>,
) -> ! {
    let cfg = configure::<A::Hal>(cmdline, online, failed, rtm_note);
    prepare(&cfg);
    crate::strategy::boot_with(cmdline.lock, cfg, image)
}

/// A secondary core's life: waits (asleep, interrupts masked) until the root task releases the
/// cores, stays parked if the kernel does not use it, then starts its tick timer (outside
/// benchmark mode; `bench` runs in benchmark mode instead) and schedules through `user`.
pub fn secondary<H: ArchHal, U: UserArch, const CPUS: usize>(
    cpu: usize,
    user: &'static UserMode<U, CPUS>,
    bench: impl FnOnce(),
) -> ! {
    H::disable_interrupts();
    while !RELEASED.load(Ordering::Acquire) {
        // Sleep until an interrupt: the release IPI, or one of the root task's Reschedule IPIs
        // (the kernel sees those when the core enters it below; taken here, before
        // `UserMode::run`, they are just counted).
        H::sleep_masked();
    }
    if cpu >= KERNEL_CORES.load(Ordering::Acquire) {
        H::halt_forever();
    }
    if BENCH_MODE.load(Ordering::Acquire) {
        bench();
    } else {
        H::timer_start(TIMER_HZ);
    }
    user.run()
}

/// Lets cores `1..cores` enter the scheduler and wakes them with the test IPI (debug call
/// `RELEASE`, [`DebugArch::release_cores`]).
pub fn release_cores<H: ArchHal>(cores: usize) {
    RELEASED.store(true, Ordering::Release);
    for c in 1..cores {
        H::send_test_ipi(c);
    }
}

/// An image ready to boot with the strategy the command line names
/// ([`strategy::boot_with`](crate::strategy::boot_with)): its [`Arch`] `A`, its HAL's user-mode
/// runtime, its test counts and its user ELF.
pub struct Start<A, U: UserArch + 'static, const CPUS: usize> {
    user: &'static UserMode<U, CPUS>,
    kernel_tests: usize,
    user_elf: &'static [u8],
    arch: PhantomData<fn() -> A>,
}

impl<A: Arch + DebugArch, U: UserArch, const CPUS: usize> Start<A, U, CPUS> {
    /// The image whose threads run through `user`, with `kernel_tests` in-kernel tests (and the
    /// user errors program's [`USER_ERROR_TESTS`](crate::selftest::USER_ERROR_TESTS) `TEST`
    /// lines) and the user ELF `user_elf`.
    ///
    /// # Safety
    /// Booted at most once, by the boot core, before any other core runs kernel code.
    pub unsafe fn new(
        user: &'static UserMode<U, CPUS>,
        kernel_tests: usize,
        user_elf: &'static [u8],
    ) -> Self {
        Self {
            user,
            kernel_tests,
            user_elf,
            arch: PhantomData,
        }
    }
}

impl<A: Arch + DebugArch, U: UserArch, const CPUS: usize> Boot for Start<A, U, CPUS> {
    fn boot<S: Strategy + KernelLockOf + 'static>(self, strategy: S, cfg: Config) -> ! {
        // SAFETY: `new`'s contract: once, by the boot core before any other core runs kernel
        // code.
        unsafe {
            start::<A, S, U, CPUS>(strategy, cfg, self.user, self.kernel_tests, self.user_elf)
        }
    }
}

/// `lock=cna`: puts the kernel cores `0..cores` on the NUMA nodes the firmware describes
/// ([`Arch::numa`], [`CnaNodes`]) in the lock's map ([`KernelNuma`]) and prints the `cna:`
/// line with the map's answers. On the boot core before the other cores enter the kernel.
/// The map's stores are `Relaxed` (plain `mov` / `str`: a hint to the lock, ordering nothing);
/// the other cores read it only after the root task's release (debug call `RELEASE`, a
/// `Release` store of [`RELEASED`] that their `Acquire` load reads), which the root task makes
/// on the boot core after this.
fn place_cna_cores<A: Arch>(arch: &A, cores: usize) {
    let nodes = CnaNodes::of(arch.numa(cores).as_ref(), cores);
    nodes.fill(KernelNuma::table());
    // The line shows what the lock reads: the map's answers.
    A::Hal::println(format_args!("{}", nodes.as_read_by::<KernelNuma>()));
}

/// Builds the kernel object with `strategy` and the initial system (the user ELF parsed from
/// `user_elf`, after the `kernel:` line; under `lock=cna` the cores' NUMA nodes first:
/// [`place_cna_cores`]), then schedules on the boot core through `user`.
///
/// # Safety
/// Called once, by the boot core, before any other core runs kernel code.
unsafe fn start<A, S, U, const CPUS: usize>(
    strategy: S,
    cfg: Config,
    user: &'static UserMode<U, CPUS>,
    kernel_tests: usize,
    user_elf: &'static [u8],
) -> !
where
    A: Arch + DebugArch,
    S: Strategy + KernelLockOf + 'static,
    U: UserArch,
{
    // SAFETY: the caller's contract: once, by the boot core before any other core runs kernel
    // code.
    let k = unsafe { crate::place_kernel(Kernel::new(strategy, A::Hal::default(), cfg.cores)) };
    // `trace=1` (the command line refused it unless the image has the `trace` feature).
    crate::trace::install(k, cfg.cmdline.trace);
    // `fastpath=0` (on by default).
    k.set_fastpath(cfg.cmdline.fastpath);
    A::Hal::println(format_args!(
        "kernel: {} strategy on {} cores, {} KiB kernel object, IPC fastpath {}",
        k.strategy().name(),
        cfg.cores,
        core::mem::size_of::<Kernel<S, A::Hal>>() / 1024,
        if cfg.cmdline.fastpath { "on" } else { "off" }
    ));
    let arch = match A::parse_elf(user_elf) {
        Ok(elf) => A::from_elf(elf),
        Err(e) => fail::<A::Hal>(format_args!("user ELF: {e:?}")),
    };
    if cfg.cmdline.lock == crate::cmdline::LockChoice::Cna {
        place_cna_cores(&arch, cfg.cores);
    }
    let setup = cfg.setup(A::counter().hz, crate::selftest::USER_ERROR_TESTS);
    let (root, plan) = crate::build(&arch, k, setup);
    if cfg.cmdline.bench == Some(crate::bench::Kind::Ipc) {
        // The boot core alone runs kernel code until the root task releases the others (which
        // it never does for this benchmark), and no tick timer runs in benchmark mode.
        crate::lockcost::run::<crate::lockcost::OnImage<A>, S>(
            k.strategy(),
            cfg.cmdline.lock.name(),
            A::Hal::cpu_id(),
            cfg.cmdline.runs,
            calls::DEBUG_CALLS.collector(),
        );
    }

    calls::init::<A>(cfg.run(kernel_tests), root, plan);
    calls::skip_pager_test_if_left_out::<A>(&cfg);
    let k: &'static Kernel<S, A::Hal> = k;
    user.install(k, calls::handle::<A>);
    if cfg.cmdline.bench.is_none() {
        A::Hal::timer_start(TIMER_HZ);
    }
    user.run()
}
