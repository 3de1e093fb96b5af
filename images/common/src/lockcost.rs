//! What interrupt-safe locking costs, measured by the image itself in kernel mode
//! (`mode=bench bench=ipc`): the `lock-pair` records of the IPC benchmark ([`crate::bench`]).
//!
//! # What is measured
//! Batches of [`LOCK_BATCH`] acquisitions and releases of one lock on the boot core, in three
//! modes, each a record of its own:
//!
//! | record | one pair | interrupts at entry |
//! |---|---|---|
//! | `lock-pair` | `lock` + `unlock` | masked |
//! | `lock-pair-irqsave` | `lock_irqsave` + `unlock_irqrestore` | enabled: the restore unmasks |
//! | `lock-pair-irqsave-masked` | the same | masked, as in an interrupt handler: the restore leaves them masked |
//!
//! The interrupt-safe pair is `kernel_locks::irq::KernelLockIrq`'s, with the CPU's own mask
//! (`kernel_locks::irq::Native`: RFLAGS.IF on x86_64, CPSR.I on ARMv7). The lock is uncontended
//! (one core), so what the `-irqsave` records add to `lock-pair` is the guard as the compiler
//! builds it around that lock: the masking, and what keeping the saved state costs the code
//! around it (`docs/locks.md` reads the figures).
//!
//! Two locks, the record's `variant`: a ticket lock of this module's own (`ticket`, the same in
//! every boot), and the kernel's own lock as booted, the very instance its entries take
//! ([`KernelLockOf`]), named by its `lock=` word: `clh`, `mcs`, `qspin`, `cna`, `rtm` (its
//! elision over CLH; without RTM every pair is the fallback CLH lock's) and `none` (the no-op
//! lock: its interrupt-safe pair is the masking alone). The ticket strategy's lock is the ticket lock,
//! measured once, and the fine-grained strategy has no one lock (its object locks are ticket
//! locks): those boots measure the ticket lock only ([`bench::measures_kernel_lock`]).
//!
//! # Method
//! A sample is one batch timed as a whole with the counter the bench programs read
//! ([`ArchFacts::read_counter`](crate::debugcalls::ArchFacts::read_counter)), less the least
//! of the same loop's times with an empty body (the counter reads and the loop's own
//! increment and branch: `extra.overhead_per_batch`), divided by the batch size when printed.
//! [`WARMUP_BATCHES`] batches are run first and not recorded. Under `-icount shift=0` one tick
//! of `tsc` or `pmccntr` is one instruction, so a sample is the instructions of one pair;
//! sabrelite's `debugcall` counter (its A9 global timer) ticks once per 10 instructions, which
//! a batch of 1000 pairs resolves to a hundredth of an instruction.
//!
//! # Why here, at boot
//! Masking interrupts takes the kernel's privilege (`cli` faults in user mode, `cpsid` does
//! nothing in USR mode), so the bench programs cannot time it. The image runs the measurement
//! on the boot core once the kernel object is built and before the root task runs: no other
//! core runs kernel code (they wait for the release, which the IPC benchmark never gives), and
//! benchmark mode starts no tick timer, so nothing interrupts a batch while interrupts are
//! enabled. The samples go into the [`Collector`] beside the programs' and are printed with
//! the IPC records once the programs are done. It adds no code to the kernel's entry paths:
//! the locks' `lock` and `unlock` are always inlined, into the kernel's entries and into these
//! loops alike.

use core::marker::PhantomData;
use core::sync::atomic::{compiler_fence, Ordering};

use kernel::{BigLock, FineGrained, NoLock as NoLockStrategy, Rtm, Strategy};
use kernel_locks::irq::{without_interrupts, Interrupts, KernelLockIrq, Native};
use kernel_locks::ticket::TicketLock;
use kernel_locks::{CpuId, KernelLock, NoLock, Relax, TxEngine};
use servers::image::bench::{param, record, LOCK_BATCH, MAX_RUNS, WARMUP_BATCHES};

use crate::bench::{self, Collector};
use crate::debugcalls::DebugArch;
use crate::Arch;

/// What the measurement needs of the machine: its interrupt mask, its counter and a moment
/// with interrupts enabled.
pub trait CostArch {
    /// The calling CPU's interrupt mask, which the interrupt-safe pairs save and restore.
    type Irq: Interrupts;
    /// Reads the counter, truncated to the word size (see
    /// [`ArchFacts::read_counter`](crate::debugcalls::ArchFacts::read_counter)).
    fn read_counter() -> usize;
    /// Runs `f` with the calling CPU's interrupts enabled, then masks them again if they were
    /// masked before.
    fn with_interrupts_on(f: impl FnOnce());
}

/// An image's [`CostArch`]: the CPU's own mask ([`Native`]), the counter of its
/// [`ArchFacts`](crate::debugcalls::ArchFacts), and its HAL's moment with interrupts on.
pub struct OnImage<A>(PhantomData<fn() -> A>);

impl<A: Arch + DebugArch> CostArch for OnImage<A> {
    type Irq = Native;

    #[inline(always)]
    fn read_counter() -> usize {
        A::read_counter()
    }

    fn with_interrupts_on(f: impl FnOnce()) {
        hal_common::irq::with_interrupts_on::<A::Hal, _>(f)
    }
}

/// Something to do with a lock of any type: what [`KernelLockOf::with_kernel_lock`] calls.
pub trait WithLock {
    /// Does it with `lock`.
    fn with<L: KernelLock>(self, lock: &L);
}

/// A strategy's kernel lock: the one [`KernelLock`] every section of the kernel holds, if the
/// strategy has one.
pub trait KernelLockOf {
    /// Calls `f` with the kernel's lock; returns whether the strategy has one.
    fn with_kernel_lock(&self, f: impl WithLock) -> bool;
}

/// The big lock: `L` itself.
impl<L: KernelLock> KernelLockOf for BigLock<L> {
    fn with_kernel_lock(&self, f: impl WithLock) -> bool {
        f.with(self.inner());
        true
    }
}

/// Elision: the `RtmLock` over the fallback, as the kernel's entries take it.
impl<L: KernelLock, E: TxEngine, R: Relax> KernelLockOf for Rtm<L, E, R> {
    fn with_kernel_lock(&self, f: impl WithLock) -> bool {
        f.with(self.inner());
        true
    }
}

/// No lock: the lock crate's no-op lock, which is what the strategy's sections take.
impl KernelLockOf for NoLockStrategy {
    fn with_kernel_lock(&self, f: impl WithLock) -> bool {
        // SAFETY: the sections run under this lock are the measurement's empty ones, which
        // touch no data.
        f.with(&unsafe { NoLock::new() });
        true
    }
}

/// The fine-grained strategy: a big-reader lock and object locks, no one lock.
impl<R: Relax> KernelLockOf for FineGrained<R> {
    fn with_kernel_lock(&self, _f: impl WithLock) -> bool {
        false
    }
}

/// Measures the ticket lock and, where [`bench::measures_kernel_lock`] says so for the boot's
/// `lock` (its `lock=` name), `strategy`'s own lock, on `cpu`: `runs` samples of each record
/// into `c`. On the boot core before the root task runs (see the module documentation); the
/// interrupt state is restored on return.
pub fn run<M: CostArch, S: Strategy + KernelLockOf>(
    strategy: &S,
    lock: &str,
    cpu: CpuId,
    runs: usize,
    c: &Collector,
) {
    let runs = runs.min(MAX_RUNS);
    let ticket = TicketLock::<kernel_locks::Spin>::with_cpus(cpu + 1);
    Measure::<M> {
        which: record::LOCK_TICKET,
        cpu,
        runs,
        c,
        arch: PhantomData,
    }
    .with(&ticket);
    if bench::measures_kernel_lock(lock) {
        // A strategy without one lock leaves the records empty: reported incomplete.
        strategy.with_kernel_lock(Measure::<M> {
            which: record::LOCK_KERNEL,
            cpu,
            runs,
            c,
            arch: PhantomData,
        });
    }
}

/// The three records of one lock ([`record::lock_pair`]`(which, ..)`).
struct Measure<'a, M> {
    which: usize,
    cpu: CpuId,
    runs: usize,
    c: &'a Collector,
    arch: PhantomData<fn() -> M>,
}

impl<M: CostArch> WithLock for Measure<'_, M> {
    fn with<L: KernelLock>(self, lock: &L) {
        let Self {
            which,
            cpu,
            runs,
            c,
            ..
        } = self;
        let empty = (0..WARMUP_BATCHES + runs)
            .map(|_| batch::<M, _>(&Empty))
            .min()
            .unwrap_or(0);
        let plain = Plain { lock, cpu };
        let irqsave = IrqSave::<L, M::Irq> {
            lock,
            cpu,
            irq: PhantomData,
        };
        let mut samples = [[0u64; MAX_RUNS]; record::PAIR_MODES];
        without_interrupts::<M::Irq, _>(|| {
            batches::<M, _>(&mut samples[record::PAIR_PLAIN][..runs], &plain);
            batches::<M, _>(&mut samples[record::PAIR_IRQSAVE_MASKED][..runs], &irqsave);
        });
        M::with_interrupts_on(|| {
            batches::<M, _>(&mut samples[record::PAIR_IRQSAVE][..runs], &irqsave)
        });
        for (mode, times) in samples.iter().enumerate() {
            let rec = record::lock_pair(which, mode);
            // The collector takes the parameters and samples of the records it knows.
            let _ = c.report(rec, param::OVERHEAD, empty);
            for (i, &t) in times[..runs].iter().enumerate() {
                let _ = c.report(rec, i, t.saturating_sub(empty));
            }
        }
    }
}

/// What one iteration of a timed loop does. `run` is always inlined, so that each loop is
/// [`batch`]'s loop around the body itself, never around a call.
trait Pair {
    /// One iteration's work.
    fn run(&self);
}

/// Nothing: the loop alone, the baseline.
struct Empty;

impl Pair for Empty {
    #[inline(always)]
    fn run(&self) {}
}

/// `lock` + `unlock`.
struct Plain<'a, L> {
    lock: &'a L,
    cpu: CpuId,
}

impl<L: KernelLock> Pair for Plain<'_, L> {
    #[inline(always)]
    fn run(&self) {
        self.lock.lock(self.cpu);
        // SAFETY: `cpu` took the lock just above.
        unsafe { self.lock.unlock(self.cpu) };
    }
}

/// `lock_irqsave` + `unlock_irqrestore` with mask `I`.
struct IrqSave<'a, L, I> {
    lock: &'a L,
    cpu: CpuId,
    irq: PhantomData<fn() -> I>,
}

impl<L: KernelLock, I: Interrupts> Pair for IrqSave<'_, L, I> {
    #[inline(always)]
    fn run(&self) {
        let saved = self.lock.lock_irqsave::<I>(self.cpu);
        // SAFETY: `cpu` took the lock just above, with this token, the last state saved.
        unsafe { self.lock.unlock_irqrestore(self.cpu, saved) };
    }
}

/// Fills `times` with batches of `pair`, after [`WARMUP_BATCHES`] not recorded.
fn batches<M: CostArch, P: Pair>(times: &mut [u64], pair: &P) {
    for _ in 0..WARMUP_BATCHES {
        batch::<M, P>(pair);
    }
    for t in times {
        *t = batch::<M, P>(pair);
    }
}

/// The counter ticks of [`LOCK_BATCH`] runs of `pair`, between two counter reads (modulo the
/// word size). In line, as [`Pair::run`] is, so that every loop is this loop around its own
/// body.
///
/// The loop's count passes through an empty `asm!` block every iteration, so the compiler
/// knows neither the count nor when it ends: it cannot unroll the loop, nor delete it when
/// `pair` does nothing, and the empty loop (the baseline subtracted from every batch) and the
/// locks' loops count alike (x86_64: `dec; test; jne`, ARMv7: `sub; cmp; bne`). The compiler
/// fences keep the body's memory accesses between the counter reads.
#[inline(always)]
fn batch<M: CostArch, P: Pair>(pair: &P) -> u64 {
    let t0 = M::read_counter();
    compiler_fence(Ordering::SeqCst);
    let mut left = LOCK_BATCH;
    loop {
        pair.run();
        left -= 1;
        // SAFETY: an empty block (no instruction) that claims to change `left`; it touches no
        // memory, stack or flags.
        unsafe {
            core::arch::asm!("/* {0} */", inout(reg) left, options(nomem, nostack, preserves_flags))
        };
        if left == 0 {
            break;
        }
    }
    compiler_fence(Ordering::SeqCst);
    let t1 = M::read_counter();
    t1.wrapping_sub(t0) as u64
}

#[cfg(test)]
mod tests {
    extern crate std;
    use core::cell::Cell;
    use std::vec::Vec;

    use kernel_locks::irq::testing::{Event, TestInterrupts};

    use super::*;
    use crate::bench::{self, Kind, RunInfo};

    std::thread_local! {
        /// The fake counter: each read and each of [`Counting`]'s operations advance it.
        static TICKS: Cell<usize> = const { Cell::new(0) };
    }

    fn tick(n: usize) {
        TICKS.with(|t| t.set(t.get() + n));
    }

    /// A machine whose counter ticks once per read and whose CPU is the test double's.
    struct Fake;

    impl CostArch for Fake {
        type Irq = TestInterrupts;

        fn read_counter() -> usize {
            let now = TICKS.with(Cell::get);
            tick(1);
            now
        }

        // The double has no unmask of its own: the test runs unmasked at depth 0, and the
        // measurement masks only inside its own guards.
        fn with_interrupts_on(f: impl FnOnce()) {
            assert_eq!(TestInterrupts::depth(), 0);
            assert!(TestInterrupts::are_enabled());
            f()
        }
    }

    /// A lock whose acquisition costs 20 ticks and release 7, over a ticket lock.
    struct Counting(TicketLock);

    // SAFETY: the ticket lock's exclusion and orderings; the ticks are a thread-local.
    unsafe impl KernelLock for Counting {
        fn name(&self) -> &'static str {
            "clh"
        }
        fn max_cpus(&self) -> usize {
            self.0.max_cpus()
        }
        fn lock(&self, cpu: CpuId) {
            tick(20);
            self.0.lock(cpu)
        }
        fn try_lock(&self, cpu: CpuId) -> bool {
            self.0.try_lock(cpu)
        }
        unsafe fn unlock(&self, cpu: CpuId) {
            tick(7);
            // SAFETY: forwarded contract.
            unsafe { self.0.unlock(cpu) }
        }
        fn is_locked(&self) -> bool {
            self.0.is_locked()
        }
    }

    fn info(lock: &'static str, runs: usize) -> RunInfo {
        RunInfo {
            lock,
            cores: 1,
            counter: "tsc",
            counter_hz: 1_000_000_000,
            interval_ticks: 1,
            runs,
        }
    }

    /// The lock-cost records of `c` (complete ones), and how many are incomplete.
    fn lock_pairs(c: &Collector, info: &RunInfo) -> (Vec<bench::Record>, usize) {
        let mut out = Vec::new();
        let mut bad = 0;
        for r in bench::records(Kind::Ipc, info, c) {
            match r {
                Ok(r) if r.head.bench.starts_with("lock-pair") => out.push(r),
                Ok(_) => {}
                Err(e) if e.bench.starts_with("lock-pair") => bad += 1,
                Err(_) => {}
            }
        }
        (out, bad)
    }

    #[test]
    fn the_kernel_lock_is_timed_per_pair_less_the_empty_loop_in_three_modes() {
        TestInterrupts::reset(true);
        TICKS.with(|t| t.set(0));
        let runs = 3;
        let strategy = BigLock::new(Counting(TicketLock::new()));
        let c = Collector::new();
        run::<Fake, _>(&strategy, "clh", 0, runs, &c);

        let (records, bad) = lock_pairs(&c, &info("clh", runs));
        assert_eq!((records.len(), bad), (6, 0));
        for r in &records {
            let ticks = if r.head.variant == "clh" { 27 } else { 0 };
            assert_eq!(r.divisor, LOCK_BATCH as u64);
            // One read's tick is the empty loop's whole time on this counter.
            assert_eq!(r.extra[2], Some(("overhead_per_batch", 1)), "{r:?}");
            assert_eq!(
                r.samples[..runs],
                [ticks * LOCK_BATCH as u64; 3],
                "{} {}",
                r.head.bench,
                r.head.variant
            );
        }

        // Per lock: one guard around the plain and masked batches, then the interrupt-safe
        // pairs entered unmasked and, inside that guard, masked.
        let pairs = (WARMUP_BATCHES + runs) * LOCK_BATCH;
        let log = TestInterrupts::take_log();
        let count = |e: Event| log.iter().filter(|x| **x == e).count();
        let save = |was_enabled, depth| Event::Save { was_enabled, depth };
        assert_eq!(count(save(true, 0)), 2 * (1 + pairs));
        assert_eq!(count(save(false, 1)), 2 * pairs);
        assert_eq!(log.len(), 2 * 2 * (1 + 2 * pairs));
        assert!(TestInterrupts::are_enabled() && TestInterrupts::depth() == 0);
        // The locks are free again.
        assert!(!strategy.inner().is_locked());
    }

    #[test]
    fn boots_without_a_kernel_lock_of_their_own_time_the_ticket_lock_only() {
        TestInterrupts::reset(true);
        let fine = FineGrained::<kernel_locks::Spin>::with_cpus(1);
        for (lock, complete, missing) in [("fine", 3, 0), ("ticket", 3, 0), ("clh", 3, 3)] {
            let c = Collector::new();
            run::<Fake, _>(&fine, lock, 0, 2, &c);
            let (records, bad) = lock_pairs(&c, &info(lock, 2));
            // A boot whose lock is measured but whose strategy has none: incomplete records.
            assert_eq!((records.len(), bad), (complete, missing), "{lock}");
            assert!(records.iter().all(|r| r.head.variant == "ticket"));
        }
    }
}
