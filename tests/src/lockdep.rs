//! The lock order the fine-grained strategy followed, as the lock-order checker
//! (`kernel_locks::lockdep`, the `lockdep` feature) recorded it: every pair of the strategy's
//! lock classes (`kernel::strategy::lockdep`) that some core took one after the other, with the
//! kernel line where that first happened. The checker itself panics at an inversion; this is
//! for a suite to show what it checked, and to require that the run reached the orders it
//! exercises.

use kernel::strategy::lockdep::{BIG, ENDPOINT, IRQ, NOTIFICATION, RUN_QUEUE, TCB};
use kernel_locks::lockdep::{self, LockClass};

/// The strategy's classes.
pub const CLASSES: [&LockClass; 6] = [&BIG, &ENDPOINT, &NOTIFICATION, &IRQ, &TCB, &RUN_QUEUE];

/// One recorded order: a lock of class `to` taken while one of `from` was held, first at
/// `site` (`file:line:column`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Order {
    /// The class held.
    pub from: &'static str,
    /// The class taken.
    pub to: &'static str,
    /// Where it was first taken so.
    pub site: String,
}

/// Every order recorded so far between the strategy's classes (the same class nested, TCBs
/// by index, included).
pub fn orders() -> Vec<Order> {
    let mut orders = Vec::new();
    for from in CLASSES {
        for to in CLASSES {
            if let Some(site) = lockdep::recorded(from, to) {
                orders.push(Order {
                    from: from.name(),
                    to: to.name(),
                    site: site.to_string(),
                });
            }
        }
    }
    orders
}

/// Prints the orders recorded (after a suite's run, with its name) and checks that each of
/// `required` (`(held, taken)` class names) is among them: the run exercised that order, under
/// the checker.
///
/// # Panics
/// If one of `required` was never recorded.
pub fn report(name: &str, required: &[(&str, &str)]) {
    let orders = orders();
    for o in &orders {
        eprintln!(
            "{name}: lockdep order {} -> {} first at {}",
            o.from, o.to, o.site
        );
    }
    for &(from, to) in required {
        assert!(
            orders.iter().any(|o| o.from == from && o.to == to),
            "{name}: the checker never saw {from} -> {to}; recorded: {orders:?}"
        );
    }
}
