//! A hosted test double for [`Interrupts`]: each thread is a CPU with an interrupt mask of its
//! own, that logs every save and restore and delivers simulated interrupts when it is unmasked.
//!
//! Test scaffolding (feature `testing`, hosted targets only: the state is a `std` thread-local).
//! A thread starts unmasked at nesting depth 0. [`TestInterrupts::raise`] plays an interrupt:
//! its handler runs at once if the thread is unmasked, otherwise at the restore that unmasks it,
//! masked while it runs, as on a CPU. So a test can check what a handler finds (the lock free,
//! say) at the moment it would really run. Restores out of the reverse order of their saves
//! panic, naming both depths.

use std::boxed::Box;
use std::cell::RefCell;
use std::vec::Vec;

use super::Interrupts;

/// The interrupt mask of the calling thread; see the [module documentation](self).
#[derive(Debug)]
pub struct TestInterrupts;

/// What [`TestInterrupts`] saves: the mask and the nesting depth before the save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    /// Whether the thread was unmasked.
    pub enabled: bool,
    /// Saves not yet restored, before this one.
    pub depth: usize,
}

/// An entry of a thread's log, in the order they happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A save and mask, from `depth` (saves not yet restored before it), which found the thread
    /// unmasked or not.
    Save {
        /// Whether interrupts were unmasked before the save.
        was_enabled: bool,
        /// Saves not yet restored, before this one.
        depth: usize,
    },
    /// A restore back to `depth`, which left the thread unmasked or not.
    Restore {
        /// Whether interrupts are unmasked after the restore.
        enabled: bool,
        /// Saves not yet restored, after this one.
        depth: usize,
    },
    /// A raised interrupt's handler ran.
    Interrupt,
    /// A test's own entry ([`TestInterrupts::note`]), such as "unlocked".
    Note(&'static str),
}

/// One thread's simulated CPU.
struct Cpu {
    enabled: bool,
    depth: usize,
    log: Vec<Event>,
    pending: Vec<Box<dyn FnOnce()>>,
}

std::thread_local! {
    static CPU: RefCell<Cpu> = RefCell::new(Cpu {
        enabled: true,
        depth: 0,
        log: Vec::new(),
        pending: Vec::new(),
    });
}

impl TestInterrupts {
    /// Sets the calling thread's mask to `enabled` at depth 0 and clears its log and pending
    /// interrupts.
    pub fn reset(enabled: bool) {
        CPU.with(|c| {
            let mut c = c.borrow_mut();
            c.enabled = enabled;
            c.depth = 0;
            c.log.clear();
            c.pending.clear();
        });
    }

    /// Saves not yet restored on the calling thread.
    pub fn depth() -> usize {
        CPU.with(|c| c.borrow().depth)
    }

    /// The calling thread's log so far, cleared.
    pub fn take_log() -> Vec<Event> {
        CPU.with(|c| core::mem::take(&mut c.borrow_mut().log))
    }

    /// Adds `what` to the calling thread's log (between the saves and restores around it).
    pub fn note(what: &'static str) {
        CPU.with(|c| c.borrow_mut().log.push(Event::Note(what)));
    }

    /// Raised interrupts waiting for the calling thread to unmask.
    pub fn pending() -> usize {
        CPU.with(|c| c.borrow().pending.len())
    }

    /// An interrupt on the calling thread: `handler` runs now if the thread is unmasked,
    /// otherwise at the restore that unmasks it; masked while it runs, either way.
    pub fn raise(handler: impl FnOnce() + 'static) {
        let enabled = CPU.with(|c| {
            let mut c = c.borrow_mut();
            if !c.enabled {
                c.pending.push(Box::new(handler));
                return None;
            }
            Some(handler)
        });
        if let Some(handler) = enabled {
            Self::deliver(Box::new(handler));
        }
    }

    /// Runs one handler as the CPU would: masked, logged, unmasked after.
    fn deliver(handler: Box<dyn FnOnce()>) {
        CPU.with(|c| {
            let mut c = c.borrow_mut();
            c.enabled = false;
            c.log.push(Event::Interrupt);
        });
        handler();
        CPU.with(|c| c.borrow_mut().enabled = true);
    }
}

// SAFETY: a simulated mask: "masked" defers `raise`d handlers until the restore that unmasks,
// and a restore puts back the saved mask. The thread-local accesses are calls the compiler does
// not move memory accesses across (they read and write memory it cannot see through).
unsafe impl Interrupts for TestInterrupts {
    type State = Saved;

    fn save_and_disable() -> Saved {
        CPU.with(|c| {
            let mut c = c.borrow_mut();
            let saved = Saved {
                enabled: c.enabled,
                depth: c.depth,
            };
            c.log.push(Event::Save {
                was_enabled: saved.enabled,
                depth: saved.depth,
            });
            c.enabled = false;
            c.depth += 1;
            saved
        })
    }

    unsafe fn restore(saved: Saved) {
        let pending = CPU.with(|c| {
            let mut c = c.borrow_mut();
            assert_eq!(
                c.depth,
                saved.depth + 1,
                "interrupt state restored out of order: the state saved at depth {} restored at \
                 depth {} (an outer guard dropped before an inner one)",
                saved.depth,
                c.depth
            );
            c.depth = saved.depth;
            c.enabled = saved.enabled;
            c.log.push(Event::Restore {
                enabled: saved.enabled,
                depth: saved.depth,
            });
            if saved.enabled {
                core::mem::take(&mut c.pending)
            } else {
                Vec::new()
            }
        });
        for handler in pending {
            Self::deliver(handler);
        }
    }

    fn are_enabled() -> bool {
        CPU.with(|c| c.borrow().enabled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_nest_and_restore_in_reverse_order() {
        TestInterrupts::reset(true);
        let outer = TestInterrupts::save_and_disable();
        let inner = TestInterrupts::save_and_disable();
        assert!(!TestInterrupts::are_enabled());
        // SAFETY: restored in reverse order on this thread.
        unsafe { TestInterrupts::restore(inner) };
        assert!(!TestInterrupts::are_enabled(), "the inner restore unmasked");
        // SAFETY: as above.
        unsafe { TestInterrupts::restore(outer) };
        assert!(TestInterrupts::are_enabled());
        assert_eq!(
            TestInterrupts::take_log(),
            [
                Event::Save {
                    was_enabled: true,
                    depth: 0
                },
                Event::Save {
                    was_enabled: false,
                    depth: 1
                },
                Event::Restore {
                    enabled: false,
                    depth: 1
                },
                Event::Restore {
                    enabled: true,
                    depth: 0
                },
            ]
        );
    }

    #[test]
    #[should_panic(expected = "restored out of order")]
    fn an_outer_restore_first_panics() {
        TestInterrupts::reset(true);
        let outer = TestInterrupts::save_and_disable();
        let _inner = TestInterrupts::save_and_disable();
        // SAFETY: deliberately out of order; the double panics before changing anything.
        unsafe { TestInterrupts::restore(outer) };
    }
}
