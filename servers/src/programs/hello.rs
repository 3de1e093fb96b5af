//! The example program (`docs/programs.md` walks through adding it): one thread per core
//! prints a greeting and reports that it finished. Everything a new program needs is here and
//! in its entry in [`PROGRAMS`](crate::programs::PROGRAMS): its role number
//! ([`role::HELLO`](crate::image::role::HELLO)), a name, whether it reports `DONE`, its code.

use crate::{debug, sys, uprintln};

/// Prints `hello from cpu N` (N is the core the image started it on, checked against the core
/// it runs on), reports DONE and parks.
pub fn run(core: usize) -> ! {
    let on = debug::cpu();
    uprintln!("hello from cpu {on} (started for cpu {core})");
    if on != core {
        // The image pins each hello to its core: anything else is a scheduling bug.
        uprintln!("hello: running on cpu {on}, not on cpu {core}");
        debug::panicked();
    }
    debug::done();
    sys::park()
}
