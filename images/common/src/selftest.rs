//! The in-kernel self-tests (test mode) that read the same on every architecture: frame
//! allocation, the lock names of the command line, SMP bring-up, the embedded user ELF, and the
//! scans of the kernel image for W+X pages and of the stack guard pages, and an interrupt-safe
//! lock that the timer interrupt handler takes too. Each prints one `TEST` line through
//! [`debugcalls::report`]. The images run them among their own, architecture-
//! specific ones (page-table layouts, entry registers, clocks).

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use hal_common::arch::UserPaging;
use hal_common::ArchHal;
use kernel::config::MAX_CPUS;
use kernel_locks::irq::{Interrupts, Native};
use kernel_locks::{ClhLock, Mutex};

use crate::cmdline::{Config, LockChoice};
use crate::debugcalls::{report, DebugArch};
use crate::elf::{Elf, ElfError};

/// `TEST` lines of the user errors program (`servers::programs::errors`).
pub const USER_ERROR_TESTS: usize = 7;

/// `kernel:frame_alloc_distinct_aligned_zeroed`: two frames from `P`, distinct, aligned and
/// zeroed. Returns the first (for the mapping tests that follow).
pub fn frame_alloc<A: DebugArch, P: UserPaging>() -> Option<u64> {
    let a = P::alloc_frame();
    let b = P::alloc_frame();
    let zeroed = a.is_some_and(|f| {
        // SAFETY: a fresh frame where the kernel sees it, only read here.
        let s = unsafe { core::slice::from_raw_parts(P::frame_ptr(f), P::PAGE_SIZE as usize) };
        s.iter().all(|&x| x == 0)
    });
    report::<A>(
        "kernel:frame_alloc_distinct_aligned_zeroed",
        a.is_some() && b.is_some() && a != b && a.is_some_and(|f| f % P::PAGE_SIZE == 0) && zeroed,
        format_args!("{a:?} {b:?}"),
    );
    a
}

/// `kernel:cmdline_lock_names`: every lock name parses, others do not, and `lock` (the run's)
/// reads back.
pub fn lock_names<A: DebugArch>(lock: LockChoice) {
    let names_ok = lock_registry::ENTRIES.iter().all(|e| {
        LockChoice::parse(e.name) == Some(e.lock)
            && e.aliases
                .iter()
                .all(|a| LockChoice::parse(a) == Some(e.lock))
    }) && LockChoice::parse("spin").is_none()
        && LockChoice::parse("").is_none()
        && LockChoice::parse(lock.name()) == Some(lock);
    report::<A>(
        "kernel:cmdline_lock_names",
        names_ok,
        format_args!("running with {}", lock.name()),
    );
}

/// `kernel:wx_no_image_page_writable_and_executable`: no page of the image `text..end`
/// (`page` bytes each) is writable and executable (`wx`), and its sections (`[text, rodata,
/// data, end]`) are in order.
pub fn no_wx_pages<A: DebugArch>(
    [text, rodata, data, end]: [u64; 4],
    page: u64,
    wx: impl Fn(u64) -> bool,
) {
    let (mut n, mut first) = (0, 0);
    let mut va = text;
    while va < end {
        if wx(va) {
            n += 1;
            if first == 0 {
                first = va;
            }
        }
        va += page;
    }
    report::<A>(
        "kernel:wx_no_image_page_writable_and_executable",
        n == 0 && text < rodata && rodata < data,
        format_args!("{n} W+X pages (first {first:#x}) in {text:#x}..{end:#x}"),
    );
}

/// `kernel:stack_guard_pages_unmapped`: every guard page in `guards` is unmapped with a
/// stack page above it (`guard_ok`).
pub fn stack_guards<A: DebugArch, G>(
    guards: impl IntoIterator<Item = G>,
    guard_ok: impl Fn(G) -> bool,
) {
    let (mut n, mut bad) = (0, 0);
    for g in guards {
        n += 1;
        if !guard_ok(g) {
            bad += 1;
        }
    }
    report::<A>(
        "kernel:stack_guard_pages_unmapped",
        n > 0 && bad == 0,
        format_args!("{n} guard pages, {bad} mapped or without a stack above"),
    );
}

/// `kernel:smp_all_cores_online`: `online` cores of the `expected` ones (`of` says whose count
/// that is) are up, and the run uses the cores the command line asked for.
pub fn smp_online<A: DebugArch>(cfg: &Config, online: usize, expected: usize, of: &str) {
    report::<A>(
        "kernel:smp_all_cores_online",
        online == expected && cfg.cores == cfg.expected_cores(online, MAX_CPUS),
        format_args!("{online} online of {expected} {of}"),
    );
}

/// `kernel:user_elf_parses`: the embedded user ELF parsed, with its entry at
/// `servers::image::USER_BASE` and at least two segments.
pub fn user_elf_parses<A: DebugArch>(elf: &Result<Elf, ElfError>) {
    let elf_ok = elf
        .as_ref()
        .is_ok_and(|e| e.entry == servers::image::USER_BASE && e.segments().count() >= 2);
    report::<A>(
        "kernel:user_elf_parses",
        elf_ok,
        format_args!("entry {:?}", elf.as_ref().map(|e| e.entry)),
    );
}

/// `kernel:user_elf_rejects_garbage`: what the parser made of bytes that are no executable.
pub fn user_elf_rejects_garbage<A: DebugArch>(bad: Result<Elf, ElfError>) {
    report::<A>(
        "kernel:user_elf_rejects_garbage",
        bad.is_err(),
        format_args!("{:?}", bad.as_ref().err()),
    );
}

/// An architecture's user-page operations, for [`user_maps`].
pub struct UserMaps<M, T, U, E> {
    /// `map(root, va, frame, writable)`: maps the user page `va`, making the tables it needs;
    /// whether it did.
    pub map: M,
    /// `translate(root, va)`: the physical address `va` reaches and the bits of its entry.
    pub translate: T,
    /// `unmap(root, va)`: removes the page; whether it did.
    pub unmap: U,
    /// `entry_ok(frame, phys, bits)`: whether `translate` of 0x12345010, the writable page of
    /// `frame`, read a user-writable entry and the right address.
    pub entry_ok: E,
    /// A kernel address `map` must refuse, the frame it is tried with, and what the detail
    /// calls it ("kernel-half").
    pub kernel: (u64, u64, &'static str),
}

/// `kernel:user_map_translate_unmap` (maps `frame` writable at 0x12345000 of `root`, reads it
/// back, unmaps it) and `kernel:user_map_rejects_kernel_and_unaligned` (a kernel address and an
/// unaligned one are refused), through `ops`.
pub fn user_maps<A: DebugArch, M, T, U, E>(
    root: Option<u64>,
    frame: Option<u64>,
    ops: &UserMaps<M, T, U, E>,
) where
    M: Fn(u64, u64, u64, bool) -> bool,
    T: Fn(u64, u64) -> Option<(u64, u64)>,
    U: Fn(u64, u64) -> bool,
    E: Fn(u64, u64, u64) -> bool,
{
    let mapped = match (root, frame) {
        (Some(r), Some(f)) => {
            let va = 0x1234_5000;
            let m = (ops.map)(r, va, f, true);
            let entry_ok =
                (ops.translate)(r, va + 0x10).is_some_and(|(p, b)| (ops.entry_ok)(f, p, b));
            let u = (ops.unmap)(r, va);
            let gone = (ops.translate)(r, va).is_none();
            m && entry_ok && u && gone
        }
        _ => false,
    };
    report::<A>(
        "kernel:user_map_translate_unmap",
        mapped,
        format_args!("map, translate, unmap at 0x12345000"),
    );

    let (kernel_va, kernel_frame, kernel_what) = ops.kernel;
    let rejected = root.is_some_and(|r| {
        !(ops.map)(r, kernel_va, kernel_frame, false) && !(ops.map)(r, 0x1001, kernel_frame, false)
    });
    report::<A>(
        "kernel:user_map_rejects_kernel_and_unaligned",
        rejected,
        format_args!("{kernel_what} and unaligned addresses refused"),
    );
}

/// The lock of [`irqsave_lock`]: held by the test with interrupts masked, taken by the tick
/// handler; the value counts the handler's critical sections.
static PROBE_LOCK: Mutex<ClhLock<MAX_CPUS>, u64> = Mutex::new(ClhLock::new(), 0);
/// The core [`irqsave_lock`] runs on (`usize::MAX`: none): the hook ignores other cores' ticks.
static PROBE_CPU: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Ticks whose handler took [`PROBE_LOCK`].
static PROBE_TAKEN: AtomicU32 = AtomicU32::new(0);
/// Ticks whose handler found [`PROBE_LOCK`] held (its `try_lock` failed: without the masking,
/// a waiting `lock` there would have deadlocked).
static PROBE_BUSY: AtomicU32 = AtomicU32::new(0);
/// The cycle counter when the handler first took [`PROBE_LOCK`].
static PROBE_FIRST: AtomicU64 = AtomicU64::new(0);

/// The tick hook of [`irqsave_lock`], in the interrupt path (interrupts masked): takes
/// [`PROBE_LOCK`] if it is free, counts that or that it was not.
///
/// Every atomic here is Relaxed: the handler runs on the test's own core (the others return at
/// the first check), which observes its own accesses in program order; x86_64 `mov`, ARMv7
/// `ldr`/`str` (and `ldrex`/`strex` loops for the increments), no barrier. The lock's own
/// orderings protect its value.
fn probe_tick<H: ArchHal>() {
    let cpu = H::cpu_id();
    if cpu != PROBE_CPU.load(Ordering::Relaxed) {
        return;
    }
    match PROBE_LOCK.try_lock_irqsave::<Native>(cpu) {
        Some(mut runs) => {
            *runs += 1;
            if PROBE_TAKEN.fetch_add(1, Ordering::Relaxed) == 0 {
                PROBE_FIRST.store(H::cycles(), Ordering::Relaxed);
            }
        }
        None => {
            PROBE_BUSY.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `kernel:irqsave_lock_defers_tick_handler`: the calling core takes a lock with
/// `lock_irqsave` while its timer ticks at 1 kHz with interrupts on, holds it for 5 tick
/// periods (a tick becomes pending, masked), and releases it; the tick handler takes the same
/// lock. Passes when the handler did not run while the lock was held, ran after the release
/// (the pending tick, taken at the restore), never found the lock held, and the lock is free at
/// the end with the handler's count in it. How long after the release the first run came is
/// reported, not judged: under QEMU without `-icount` it follows the host's scheduling. Run before the kernel starts
/// its timer; stops the timer and removes the hook on return.
pub fn irqsave_lock<A: DebugArch, H: ArchHal>() {
    const HZ: u32 = 1000;
    const HELD_PERIODS: u64 = 5;
    const WAIT_PERIODS: u64 = 200;
    let cpu = H::cpu_id();
    let period = (H::cycles_hz() / u64::from(HZ)).max(1);
    PROBE_CPU.store(cpu, Ordering::Relaxed);
    hal_common::irq::set_tick_hook(Some(probe_tick::<H>));
    H::timer_start(HZ);
    let (masked, taken_while_held, release) = hal_common::irq::with_interrupts_on::<H, _>(|| {
        let mut held = PROBE_LOCK.lock_irqsave::<Native>(cpu);
        let masked = !Native::are_enabled();
        // A tick may have run between the timer's start and the lock (interrupts were on, the
        // lock free): count from here, with the handler held off by the masking.
        *held = 0;
        PROBE_TAKEN.store(0, Ordering::Relaxed);
        PROBE_BUSY.store(0, Ordering::Relaxed);
        PROBE_FIRST.store(0, Ordering::Relaxed);
        let start = H::cycles();
        while H::cycles() - start < HELD_PERIODS * period {
            core::hint::spin_loop();
        }
        let taken_while_held = PROBE_TAKEN.load(Ordering::Relaxed);
        let release = H::cycles();
        drop(held); // released, then interrupts unmasked: the pending tick is taken here
        while PROBE_TAKEN.load(Ordering::Relaxed) == 0
            && H::cycles() - release < WAIT_PERIODS * period
        {
            core::hint::spin_loop();
        }
        (masked, taken_while_held, release)
    });
    H::timer_stop();
    hal_common::irq::set_tick_hook(None);
    PROBE_CPU.store(usize::MAX, Ordering::Relaxed);
    let taken = PROBE_TAKEN.load(Ordering::Relaxed);
    let busy = PROBE_BUSY.load(Ordering::Relaxed);
    let delay = PROBE_FIRST.load(Ordering::Relaxed).wrapping_sub(release);
    let counted = PROBE_LOCK.try_lock(cpu).map(|runs| *runs);
    let ns = |cycles: u64| H::cycles_to_ns(cycles);
    report::<A>(
        "kernel:irqsave_lock_defers_tick_handler",
        masked
            && taken_while_held == 0
            && taken > 0
            && busy == 0
            && counted == Some(u64::from(taken)),
        format_args!(
            "handler ran {taken_while_held} times in {} us held; {taken} times after the \
             release, the first {} ns after it; found the lock held {busy} times; lock count \
             {counted:?}",
            ns(HELD_PERIODS * period) / 1000,
            ns(delay),
        ),
    );
}
