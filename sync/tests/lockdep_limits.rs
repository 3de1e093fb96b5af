//! The lock-order checker's class limit, in a process of its own (the registry is the
//! process's: in `tests/lockdep.rs` it would take the classes the other tests need).
#![cfg(not(kernel_locks_loom))]

use std::panic::{self, AssertUnwindSafe};

use kernel_locks::lockdep::{self, LockClass, MAX_CLASSES};

#[test]
fn one_class_too_many_panics_naming_it() {
    static CLASSES: [LockClass; MAX_CLASSES] = [const { LockClass::new("limit") }; MAX_CLASSES];
    static ONE_MORE: LockClass = LockClass::new("limit.one-more");
    for (i, class) in CLASSES.iter().enumerate() {
        lockdep::acquire(class, 0);
        lockdep::release(class, 0);
        assert_eq!(class.index(), i);
    }
    let payload = panic::catch_unwind(AssertUnwindSafe(|| lockdep::acquire(&ONE_MORE, 0)))
        .expect_err("a class beyond MAX_CLASSES was registered");
    let message = payload.downcast::<String>().unwrap();
    assert!(
        message.contains("`limit.one-more` is one too many") && message.contains("64"),
        "{message}"
    );
    // The registered classes still work, and the checker's lock was given back.
    lockdep::acquire(&CLASSES[0], 0);
    lockdep::acquire(&CLASSES[1], 0);
    lockdep::release(&CLASSES[0], 0);
    lockdep::release(&CLASSES[1], 0);
    assert_eq!(lockdep::held(0), 0);
}
