//! The lock-order checker (feature `lockdep`): inversions between threads and around longer
//! cycles are reported with both sites before any lock waits, a class taken twice is reported
//! unless the nesting is declared, releases may come in any order, and consistent orders pass.
//!
//! Every test has classes and contexts of its own ([`Contexts::claim`]): the order graph is
//! shared by the whole process, and tests run on parallel threads.
#![cfg(not(kernel_locks_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::Barrier;
use std::thread;

use kernel_locks::lockdep::{self, Checked, Contexts, LockClass, MAX_HELD};
use kernel_locks::{BrLock, KernelLock, KernelRwLock, Mutex, Spin, TicketLock};

type Lock = Checked<TicketLock<Spin>>;

/// A ticket lock of `class` reporting to `contexts`.
fn lock(class: &'static LockClass, contexts: Contexts) -> Lock {
    Checked::new(TicketLock::new(), class).in_contexts(contexts)
}

/// The message of the panic raised by `f`, which must panic.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("no panic");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => (*payload.downcast::<&str>().expect("a text payload")).to_owned(),
    }
}

/// `file:line:` of a line of this file, as a report names it.
fn site(line: u32) -> String {
    format!("{}:{line}:", file!())
}

#[track_caller]
fn assert_names(message: &str, lines: &[u32]) {
    for &line in lines {
        assert!(
            message.contains(&site(line)),
            "{} not in: {message}",
            site(line)
        );
    }
}

#[test]
fn ab_ba_inversion_across_two_threads_panics_naming_both_sites() {
    static A: LockClass = LockClass::new("ab.A");
    static B: LockClass = LockClass::new("ab.B");
    let claim = Contexts::claim(2);
    let (a, b) = (lock(&A, claim.contexts()), lock(&B, claim.contexts()));
    let barrier = Barrier::new(2);
    // Both threads hold their first lock when they ask for the second: without the checker
    // they deadlock. Whichever reports its second acquisition last panics before waiting, and
    // gives its first lock back, so that the other gets through.
    let (first, second) = thread::scope(|s| {
        let first = s.spawn(|| {
            a.lock(0);
            barrier.wait();
            let line = line!() + 1;
            let result = panic::catch_unwind(AssertUnwindSafe(|| b.lock(0)));
            if result.is_ok() {
                // SAFETY: CPU 0 holds `b`.
                unsafe { b.unlock(0) };
            }
            // SAFETY: CPU 0 holds `a`.
            unsafe { a.unlock(0) };
            (line, result.err())
        });
        let second = s.spawn(|| {
            b.lock(1);
            barrier.wait();
            let line = line!() + 1;
            let result = panic::catch_unwind(AssertUnwindSafe(|| a.lock(1)));
            if result.is_ok() {
                // SAFETY: CPU 1 holds `a`.
                unsafe { a.unlock(1) };
            }
            // SAFETY: CPU 1 holds `b`.
            unsafe { b.unlock(1) };
            (line, result.err())
        });
        (first.join().unwrap(), second.join().unwrap())
    });
    let ((line0, err0), (line1, err1)) = (first, second);
    let (message, names) = match (err0, err1) {
        (Some(e), None) => (e, ["`ab.B`", "`ab.A`"]),
        (None, Some(e)) => (e, ["`ab.A`", "`ab.B`"]),
        (e0, e1) => panic!(
            "one inversion expected, got {} panics",
            e0.is_some() as u8 + e1.is_some() as u8
        ),
    };
    let message = *message.downcast::<String>().unwrap();
    assert!(message.contains("lock order inversion"), "{message}");
    // This acquisition's site and the recorded site of the opposite order, both classes.
    assert_names(&message, &[line0, line1]);
    for name in names {
        assert!(message.contains(name), "{message}");
    }
    assert!(!a.is_locked() && !b.is_locked());
    for cpu in 0..2 {
        claim.contexts().assert_none_held(cpu);
    }
}

#[test]
fn the_inversion_panics_before_the_lock_waits() {
    static A: LockClass = LockClass::new("wait.A");
    static B: LockClass = LockClass::new("wait.B");
    let claim = Contexts::claim(2);
    let (a, b) = (lock(&A, claim.contexts()), lock(&B, claim.contexts()));
    let recorded = line!() + 2;
    a.lock(0);
    b.lock(0);
    // CPU 0 still holds both; CPU 1 asks for `a` while holding another lock of class B: it
    // would wait for ever if the check came after the wait.
    let b2 = lock(&B, claim.contexts());
    b2.lock(1);
    let line = line!() + 1;
    let message = panic_message(|| a.lock(1));
    assert_names(&message, &[line, recorded]);
    assert!(message.contains("`wait.A` acquired at"), "{message}");
    // SAFETY: CPU 1 holds `b2`, CPU 0 `a` and `b`.
    unsafe {
        b2.unlock(1);
        b.unlock(0);
        a.unlock(0);
    }
}

#[test]
fn a_three_cycle_is_reported_with_every_recorded_site() {
    static X: LockClass = LockClass::new("cycle.X");
    static Y: LockClass = LockClass::new("cycle.Y");
    static Z: LockClass = LockClass::new("cycle.Z");
    let claim = Contexts::claim(3);
    let c = claim.contexts();
    let (x, y, z) = (lock(&X, c), lock(&Y, c), lock(&Z, c));
    // X -> Y on CPU 0, Y -> Z on CPU 1: no pair inverted.
    x.lock(0);
    let xy = line!() + 1;
    y.lock(0);
    // SAFETY: CPU 0 holds both.
    unsafe { Checked::unlock_all([&y, &x], 0) };
    y.lock(1);
    let yz = line!() + 1;
    z.lock(1);
    // SAFETY: CPU 1 holds both.
    unsafe { Checked::unlock_all([&z, &y], 1) };
    // Z -> X on CPU 2 closes the cycle X -> Y -> Z -> X.
    let zx_held = line!() + 1;
    z.lock(2);
    let zx = line!() + 1;
    let message = panic_message(|| x.lock(2));
    assert_names(&message, &[zx, zx_held, xy, yz]);
    assert!(
        message.contains("`cycle.X` -> `cycle.Y`") && message.contains("-> `cycle.Z`"),
        "{message}"
    );
    // SAFETY: CPU 2 holds `z`.
    unsafe { z.unlock(2) };
    // The edge was refused: the graph has no cycle, and the consistent order still passes.
    x.lock(2);
    y.lock(2);
    z.lock(2);
    // SAFETY: CPU 2 holds all three.
    unsafe { Checked::unlock_all([&x, &y, &z], 2) };
}

#[test]
fn a_class_taken_twice_panics_naming_both_sites() {
    static RQ: LockClass = LockClass::new("twice.rq");
    let claim = Contexts::claim(1);
    let (one, two) = (lock(&RQ, claim.contexts()), lock(&RQ, claim.contexts()));
    let first = line!() + 1;
    one.lock(0);
    let second = line!() + 1;
    let message = panic_message(|| two.lock(0));
    assert_names(&message, &[first, second]);
    assert!(
        message.contains("second lock of class `twice.rq`"),
        "{message}"
    );
    assert!(
        !two.is_locked(),
        "the check must come before the acquisition"
    );
    // SAFETY: CPU 0 holds `one`.
    unsafe { one.unlock(0) };
    claim.contexts().assert_none_held(0);
}

#[test]
fn nesting_by_design_is_allowed_and_keys_are_checked() {
    static ANY: LockClass = LockClass::new("nest.any");
    static TCB: LockClass = LockClass::new("nest.tcb");
    let claim = Contexts::claim(1);
    let c = claim.contexts();
    // Declared nested: any order.
    let (p, q) = (lock(&ANY, c), lock(&ANY, c));
    q.lock(0);
    p.lock_nested(0);
    // SAFETY: CPU 0 holds both.
    unsafe { Checked::unlock_all([&q, &p], 0) };
    p.lock(0);
    q.lock_nested(0);
    // SAFETY: CPU 0 holds both.
    unsafe { Checked::unlock_all([&p, &q], 0) };

    // Ordered by key: increasing passes, as `lock_all` in index order does.
    let tcbs: Vec<Lock> = (0..4).map(|i| lock(&TCB, c).ordered(i)).collect();
    Checked::lock_all([&tcbs[0], &tcbs[2], &tcbs[3]], 0);
    // SAFETY: CPU 0 holds the three.
    unsafe { Checked::unlock_all([&tcbs[2], &tcbs[0], &tcbs[3]], 0) };
    // Decreasing panics, naming the key held and both sites.
    let held = line!() + 1;
    tcbs[2].lock(0);
    let line = line!() + 1;
    let message = panic_message(|| tcbs[1].lock(0));
    assert_names(&message, &[held, line]);
    assert!(
        message.contains("key 1") && message.contains("key 2"),
        "{message}"
    );
    assert!(!tcbs[1].is_locked());
    // SAFETY: CPU 0 holds `tcbs[2]`.
    unsafe { tcbs[2].unlock(0) };
    // The same key twice (the same lock) panics too.
    tcbs[3].lock(0);
    let message = panic_message(|| lockdep::Contexts::acquire_ordered(c, &TCB, 0, 3));
    assert!(message.contains("key 3"), "{message}");
    // SAFETY: CPU 0 holds `tcbs[3]`.
    unsafe { tcbs[3].unlock(0) };
    c.assert_none_held(0);
}

#[test]
fn releases_may_come_in_any_order() {
    static A: LockClass = LockClass::new("release.A");
    static B: LockClass = LockClass::new("release.B");
    static C: LockClass = LockClass::new("release.C");
    let claim = Contexts::claim(1);
    let ctx = claim.contexts();
    let (a, b, c) = (lock(&A, ctx), lock(&B, ctx), lock(&C, ctx));
    a.lock(0);
    b.lock(0);
    c.lock(0);
    assert_eq!(ctx.held(0), 3);
    // SAFETY: CPU 0 holds each, released once: the oldest first, then the newest.
    unsafe { a.unlock(0) };
    assert_eq!(ctx.held(0), 2);
    // With `a` released, B and C are still held: taking `a` now records C -> A (and B -> A),
    // which inverts A -> B: the stack kept the right entries.
    let message = panic_message(|| a.lock(0));
    assert!(message.contains("lock order inversion"), "{message}");
    // SAFETY: as above.
    unsafe {
        c.unlock(0);
        b.unlock(0);
    }
    ctx.assert_none_held(0);
    // A release of a class not held panics.
    let message = panic_message(|| ctx.release(&A, 0));
    assert!(message.contains("`release.A`, but holds none"), "{message}");
    // And a CPU that leaves with a lock held is named with its site.
    let line = line!() + 1;
    b.lock(0);
    let message = panic_message(|| ctx.assert_none_held(0));
    assert_names(&message, &[line]);
    // SAFETY: CPU 0 holds `b`.
    unsafe { b.unlock(0) };
}

#[test]
fn consistent_orders_on_many_threads_pass() {
    static OUTER: LockClass = LockClass::new("consistent.outer");
    static INNER: LockClass = LockClass::new("consistent.inner");
    static LEAF: LockClass = LockClass::new("consistent.leaf");
    const THREADS: usize = 4;
    const ROUNDS: u64 = 2_000;
    let claim = Contexts::claim(THREADS);
    let c = claim.contexts();
    let outer = Mutex::new(lock(&OUTER, c), 0u64);
    let inner = [0, 1].map(|i| Mutex::new(lock(&INNER, c).ordered(i), 0u64));
    let leaf = Mutex::new(lock(&LEAF, c), 0u64);
    thread::scope(|s| {
        for cpu in 0..THREADS {
            let (outer, inner, leaf) = (&outer, &inner, &leaf);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    // Orders that all fit outer -> inner (by key) -> leaf, with some levels
                    // left out and a trylock besides.
                    let mut o = (round % 2 == 0).then(|| outer.lock(cpu));
                    let mut i0 = inner[0].lock(cpu);
                    let mut i1 = inner[1].lock(cpu);
                    if let Some(mut l) = leaf.try_lock(cpu) {
                        *l += 1;
                    } else {
                        *leaf.lock(cpu) += 1;
                    }
                    *i0 += 1;
                    *i1 += 1;
                    drop(i0);
                    if let Some(o) = o.as_mut() {
                        **o += 1;
                    }
                    drop(o);
                    drop(i1);
                }
            });
        }
    });
    let total = THREADS as u64 * ROUNDS;
    assert_eq!(*leaf.lock(0), total);
    assert_eq!(*inner[0].lock(0) + *inner[1].lock(0), 2 * total);
    assert_eq!(*outer.lock(0), total / 2);
    for cpu in 0..THREADS {
        c.assert_none_held(cpu);
    }
}

#[test]
fn a_trylock_adds_no_order_but_orders_what_follows() {
    static A: LockClass = LockClass::new("try.A");
    static B: LockClass = LockClass::new("try.B");
    static C: LockClass = LockClass::new("try.C");
    let claim = Contexts::claim(1);
    let ctx = claim.contexts();
    let (a, b, c) = (lock(&A, ctx), lock(&B, ctx), lock(&C, ctx));
    a.lock(0);
    b.lock(0);
    // SAFETY: CPU 0 holds both.
    unsafe { Checked::unlock_all([&b, &a], 0) };
    // B then a trylock of A: never waits, so no inversion.
    b.lock(0);
    assert!(a.try_lock(0));
    // But C taken under the trylocked A is ordered after A: A -> C.
    c.lock(0);
    // SAFETY: CPU 0 holds all three.
    unsafe { Checked::unlock_all([&a, &b, &c], 0) };
    c.lock(0);
    let message = panic_message(|| a.lock(0));
    assert!(
        message.contains("recorded order `try.A` -> `try.C`"),
        "{message}"
    );
    // SAFETY: CPU 0 holds `c`.
    unsafe { c.unlock(0) };
}

#[test]
fn both_sides_of_a_reader_writer_lock_are_one_class() {
    static BIG: LockClass = LockClass::new("rw.big");
    static OBJ: LockClass = LockClass::new("rw.obj");
    let claim = Contexts::claim(2);
    let c = claim.contexts();
    let big = Checked::new(BrLock::<2>::new(), &BIG).in_contexts(c);
    let obj = lock(&OBJ, c);
    // The kernel's shape: the read side, then an object lock.
    big.read_lock_unnested(0);
    obj.lock(0);
    // SAFETY: CPU 0 holds both.
    unsafe {
        obj.unlock(0);
        big.read_unlock_unnested(0);
    }
    assert!(big.try_read_lock(1));
    // SAFETY: CPU 1 holds the read side.
    unsafe { big.read_unlock(1) };
    // An object lock, then the write side: inverts the order the read side recorded.
    obj.lock(1);
    let message = panic_message(|| big.lock(1));
    assert!(message.contains("`rw.big` acquired at"), "{message}");
    assert!(!big.is_locked(), "the write side was taken");
    // SAFETY: CPU 1 holds `obj`.
    unsafe { obj.unlock(1) };
}

#[test]
fn a_long_cycle_through_many_classes_is_found() {
    const N: usize = 30;
    static MANY: [LockClass; N] = [const { LockClass::new("many") }; N];
    let claim = Contexts::claim(1);
    let c = claim.contexts();
    let locks: Vec<Lock> = MANY.iter().map(|class| lock(class, c)).collect();
    // A chain 0 -> 1 -> ... -> 29, two at a time.
    for pair in locks.windows(2) {
        pair[0].lock(0);
        pair[1].lock(0);
        // SAFETY: CPU 0 holds both.
        unsafe { Checked::unlock_all([&pair[0], &pair[1]], 0) };
    }
    // 29 then 0 closes a cycle of 30 classes; the report walks all 29 recorded edges.
    locks[N - 1].lock(0);
    let message = panic_message(|| locks[0].lock(0));
    assert_eq!(
        message.matches("while holding `many`").count(),
        N,
        "{message}"
    );
    // SAFETY: CPU 0 holds the last.
    unsafe { locks[N - 1].unlock(0) };
    // Holding at most MAX_HELD locks: one more panics, listing those held.
    let deep: Vec<Lock> = (0..=MAX_HELD)
        .map(|i| lock(&MANY[0], c).ordered(i))
        .collect();
    for l in &deep[..MAX_HELD] {
        l.lock(0);
    }
    let message = panic_message(|| deep[MAX_HELD].lock(0));
    assert!(message.contains("while holding 16"), "{message}");
    for l in &deep[..MAX_HELD] {
        // SAFETY: CPU 0 holds it.
        unsafe { l.unlock(0) };
    }
    c.assert_none_held(0);
}

#[test]
fn claims_are_disjoint_emptied_and_bounded() {
    static K: LockClass = LockClass::new("claims.k");
    let one = Contexts::claim(3);
    let two = Contexts::claim(3);
    assert_ne!(one.contexts(), two.contexts());
    assert_eq!(one.contexts().len(), 3);
    // CPU 0 of one kernel holds K: CPU 0 of the other may take K too (another stack).
    one.contexts().acquire(&K, 0);
    two.contexts().acquire(&K, 0);
    two.contexts().release(&K, 0);
    // An id out of the range panics.
    let message = panic_message(|| one.contexts().acquire(&K, 3));
    assert!(message.contains("CPU id 3 out of range"), "{message}");
    // A dropped claim is emptied: the next claim of its contexts starts with nothing held.
    let contexts = one.contexts();
    drop(one);
    let again = Contexts::claim(3);
    if again.contexts() == contexts {
        again.contexts().assert_none_held(0);
    }
    // More than there are panics with the reason.
    let message = panic_message(|| drop(Contexts::claim(lockdep::CLAIMABLE_CONTEXTS + 1)));
    assert!(message.contains("free contexts"), "{message}");
}

#[test]
fn the_free_functions_use_the_plain_cpu_ids() {
    static A: LockClass = LockClass::new("free.A");
    static B: LockClass = LockClass::new("free.B");
    // CPU 15, the last plain id: no other test of this file uses plain ids.
    let cpu = lockdep::MAX_CPUS - 1;
    lockdep::acquire(&A, cpu);
    lockdep::acquire_ordered(&B, cpu, 1);
    lockdep::acquire_ordered(&B, cpu, 2);
    lockdep::try_acquired(&A, cpu, None);
    assert_eq!(lockdep::held(cpu), 4);
    lockdep::release_ordered(&B, cpu, 1);
    lockdep::release(&A, cpu);
    lockdep::release(&A, cpu);
    lockdep::release_ordered(&B, cpu, 2);
    assert_eq!(lockdep::held(cpu), 0);
    assert_eq!(A.name(), "free.A");
    assert!(A.index() < lockdep::MAX_CLASSES);
}
