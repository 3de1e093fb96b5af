//! loom models shared by the per-lock model tests (compiled only with `--cfg kernel_locks_loom`).
#![allow(dead_code)]

use kernel_locks::KernelLock;
use loom::cell::UnsafeCell;
use loom::sync::Arc;

/// `threads` loom threads (CPUs 0..threads) each take the lock once and increment a loom
/// `UnsafeCell`, which loom checks for unsynchronised access; then the total is checked.
/// Pass `use_try` to acquire through `try_lock` in a loop instead of `lock`.
pub fn mutual_exclusion<L, F>(make: F, threads: usize, use_try: bool)
where
    L: KernelLock + Send + 'static,
    F: Fn() -> L + Sync + Send + 'static,
{
    mutual_exclusion_in(loom::model::Builder::new(), make, threads, use_try);
}

/// [`mutual_exclusion`] explored by `builder` (a preemption bound, for models too large to
/// explore whole).
pub fn mutual_exclusion_in<L, F>(
    builder: loom::model::Builder,
    make: F,
    threads: usize,
    use_try: bool,
) where
    L: KernelLock + Send + 'static,
    F: Fn() -> L + Sync + Send + 'static,
{
    exclusion(builder, make, threads, 1, move |_| use_try);
}

/// CPU 0 waits in `lock` while CPU 1 polls with `try_lock`, each once.
pub fn lock_against_try_lock<L, F>(make: F)
where
    L: KernelLock + Send + 'static,
    F: Fn() -> L + Sync + Send + 'static,
{
    exclusion(loom::model::Builder::new(), make, 2, 1, |cpu| cpu == 1);
}

/// The general model, explored by `builder`: `threads` loom threads (CPUs 0..threads) each take
/// the lock `rounds` times (through `try_lock` in a loop where `use_try(cpu)`, else `lock`) and
/// increment a loom `UnsafeCell`, which loom checks for unsynchronised access; then the total is
/// checked and the lock must be free.
pub fn exclusion<L, F>(
    builder: loom::model::Builder,
    make: F,
    threads: usize,
    rounds: usize,
    use_try: impl Fn(usize) -> bool + Copy + Send + Sync + 'static,
) where
    L: KernelLock + Send + 'static,
    F: Fn() -> L + Sync + Send + 'static,
{
    exclusion_per_cpu(builder, make, vec![rounds; threads], use_try);
}

/// [`exclusion`] with CPU `cpu` taking the lock `rounds[cpu]` times (CPU 0 is the model's main
/// thread, the others are spawned in order).
pub fn exclusion_per_cpu<L, F>(
    builder: loom::model::Builder,
    make: F,
    rounds: Vec<usize>,
    use_try: impl Fn(usize) -> bool + Copy + Send + Sync + 'static,
) where
    L: KernelLock + Send + 'static,
    F: Fn() -> L + Sync + Send + 'static,
{
    let total: usize = rounds.iter().sum();
    builder.check(move || {
        let lock = Arc::new(make());
        let data = Arc::new(UnsafeCell::new(0usize));
        let handles: Vec<_> = (1..rounds.len())
            .map(|cpu| {
                let (lock, data, rounds) = (lock.clone(), data.clone(), rounds[cpu]);
                loom::thread::spawn(move || {
                    for _ in 0..rounds {
                        critical(&*lock, &data, cpu, use_try(cpu));
                    }
                })
            })
            .collect();
        for _ in 0..rounds[0] {
            critical(&*lock, &data, 0, use_try(0));
        }
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: every thread has been joined; nobody else touches the cell.
        assert_eq!(data.with(|v| unsafe { *v }), total);
        assert!(!lock.is_locked());
    });
}

fn critical<L: KernelLock>(lock: &L, data: &UnsafeCell<usize>, cpu: usize, use_try: bool) {
    if use_try {
        while !lock.try_lock(cpu) {
            loom::thread::yield_now();
        }
    } else {
        lock.lock(cpu);
    }
    // SAFETY: loom reports a data race here if the lock does not exclude the other threads.
    data.with_mut(|v| unsafe { *v += 1 });
    // SAFETY: `cpu` holds the lock.
    unsafe { lock.unlock(cpu) };
}

/// A builder that explores every interleaving with at most `preemptions` preemptions (the
/// environment's `LOOM_MAX_PREEMPTIONS` overrides it), for the models too large to explore
/// whole in minutes.
pub fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder
}
