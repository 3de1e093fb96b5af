//! [`InitOnce`]: a value the boot core sets once and every core reads afterwards (the platform
//! description, the installed kernel), without a lock on the read path.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU8, Ordering};

const EMPTY: u8 = 0;
const WRITING: u8 = 1;
const SET: u8 = 2;

/// A value set once during boot, read-only afterwards.
pub struct InitOnce<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written once, by the one caller that won the EMPTY -> WRITING exchange,
// before SET is published with Release; readers only read it after observing SET with Acquire
// (or, for `get_observed`, after an earlier such observation on the same core), and never
// mutate it. `T: Sync` because every core gets a shared reference; `T: Send` because the value
// is made on one core and read (and, in principle, dropped) on others.
unsafe impl<T: Sync + Send> Sync for InitOnce<T> {}

impl<T> InitOnce<T> {
    /// An empty cell.
    pub const fn new() -> Self {
        Self {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Stores the value and returns it; panics if the cell was set (or is being set) before.
    pub fn set(&self, value: T) -> &T {
        if self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            panic!("InitOnce set twice");
        }
        // SAFETY: this caller won the exchange: nobody else writes, and nobody reads before
        // SET is stored below.
        let r = unsafe { (*self.value.get()).write(value) };
        self.state.store(SET, Ordering::Release);
        r
    }

    /// The value, once set.
    pub fn get(&self) -> Option<&T> {
        if self.state.load(Ordering::Acquire) == SET {
            // SAFETY: initialised before SET was stored (Release, observed above), never
            // written again.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// The value, for a caller whose core already observed it set through [`get`](Self::get)
    /// (Acquire) earlier in program order: that load made the initialisation happen-before
    /// everything this core does afterwards, so this read needs no Acquire of its own (on ARMv7
    /// an Acquire load is a `dmb ish`; this is for the per-trap paths).
    ///
    /// # Safety
    /// The calling core received `Some` from [`get`](Self::get) on this cell before.
    pub unsafe fn get_observed(&self) -> &T {
        debug_assert!(
            self.state.load(Ordering::Relaxed) == SET,
            "InitOnce read before set"
        );
        // SAFETY: the caller's earlier Acquire load saw SET, so the write of the value
        // happens-before this read; it is never written again.
        unsafe { (*self.value.get()).assume_init_ref() }
    }
}

impl<T> Default for InitOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::InitOnce;

    #[test]
    fn empty_until_set_then_the_value() {
        let c = InitOnce::new();
        assert!(c.get().is_none());
        assert_eq!(*c.set(7u32), 7);
        assert_eq!(c.get(), Some(&7));
        // SAFETY: `get` returned `Some` on this thread above.
        assert_eq!(unsafe { *c.get_observed() }, 7);
    }

    #[test]
    #[should_panic(expected = "InitOnce set twice")]
    fn a_second_set_panics() {
        let c = InitOnce::new();
        c.set(1u8);
        c.set(2u8);
    }

    #[test]
    fn racing_setters_one_wins() {
        let c = InitOnce::new();
        let wins = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4u32)
                .map(|i| {
                    let c = &c;
                    s.spawn(move || {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            c.set(i);
                        }))
                        .is_ok()
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("setter thread"))
                .filter(|&won| won)
                .count()
        });
        assert_eq!(wins, 1, "exactly one setter succeeds");
        assert!(c.get().is_some_and(|&v| v < 4));
    }
}
