//! Kernel lock tracing in the images: a static per-core ring set as the kernel's
//! trace sink when the command line says `trace=1`, and its dump to the console at the end of
//! the run, which `cargo xtask trace locks --image` turns into a `sim` trace file.
//!
//! # Why like this
//! The kernel only records ([`kernel::trace`]); where the records go is the embedder's choice.
//! An image has no file system and no allocator, so the rings are one `static`
//! [`Tracer`] of [`RING`] records per core, and the only way out is the console: once every
//! program reported (see `debugcalls`' shutdown) each core's ring is printed as hex text, one
//! record per line, in the trace file's own record encoding ([`Record::encode`]), so the host
//! decodes it with `sim`'s reader and nothing here duplicates the format. The rings are read
//! while the other cores may still take interrupts (the ring's readers never stop its writer):
//! every ring is cut at the count it had when the dump began, and a record overwritten
//! meanwhile is counted as lost instead of printed.
//!
//! # Console format
//! ```text
//! TRACE-BEGIN cores=2 lock=clh counter=tsc hz=1000000000 ring=2048
//! TRACE-RECORD <224 hex digits: the 112 bytes of one record of core 0>
//! ...
//! TRACE-CORE 0 records=310 lost=0
//! TRACE-RECORD <... core 1 ...>
//! ...
//! TRACE-CORE 1 records=310 lost=0
//! TRACE-END records=620 lost=0
//! ```
//! `counter` and `hz` are the kernel's cycle counter as the image knows it (the host may know
//! the true rate better, e.g. under `-icount`); `lost` counts the records each ring no longer
//! held (it keeps the newest [`RING`]).
//!
//! Without the `trace` feature this module has only no-op functions and `trace=1` is refused on
//! the command line.

use core::fmt::Arguments;

use kernel::{Hal, Kernel, Strategy};
pub use protocol::console::TraceBegin;
#[cfg(feature = "trace")]
use protocol::console::{TraceCore, TraceEnd, TraceRecord};

/// Whether the image was built with the `trace` feature (`trace=1` is refused otherwise).
pub const BUILT: bool = cfg!(feature = "trace");

/// Records kept per core: the newest this many (112 bytes each; 8 cores × 2048 × 112 bytes is
/// 1.75 MiB of the image's memory).
pub const RING: usize = 2048;

#[cfg(feature = "trace")]
mod on {
    use core::sync::atomic::AtomicBool;

    use kernel::trace::Tracer;

    /// The rings the kernel records into once [`super::install`] set them.
    pub static TRACER: Tracer<{ super::RING }> = Tracer::new();
    /// Whether [`super::install`] set [`TRACER`] (what the dump checks).
    pub static ON: AtomicBool = AtomicBool::new(false);
}

/// Makes `k` trace every later kernel entry into the static rings if `on` (which the command
/// line only allows with the `trace` feature; without it this does nothing).
pub fn install<S: Strategy, H: Hal>(k: &mut Kernel<S, H>, on: bool) {
    #[cfg(feature = "trace")]
    if on {
        k.set_tracer(&on::TRACER);
        on::ON.store(true, core::sync::atomic::Ordering::Release);
    }
    #[cfg(not(feature = "trace"))]
    let _ = (k, on);
}

/// Whether entries are being traced.
pub fn enabled() -> bool {
    #[cfg(feature = "trace")]
    return on::ON.load(core::sync::atomic::Ordering::Acquire);
    #[cfg(not(feature = "trace"))]
    false
}

/// Prints every core's ring between `TRACE-BEGIN` and `TRACE-END` through `println` (one
/// call per line), if tracing is on; otherwise prints nothing. See the module's format.
/// `header` is the dump's first line: the cores the kernel ran on (at most `MAX_CPUS` are
/// dumped), the `lock=` name, the kernel's cycle counter (`tsc`, `debugcall` for the ARMv7
/// timers) and its frequency as the image knows it, and [`RING`].
pub fn dump(header: &TraceBegin<'_>, mut println: impl FnMut(Arguments<'_>)) {
    if !enabled() {
        return;
    }
    #[cfg(feature = "trace")]
    {
        let cores = header.cores.min(kernel::config::MAX_CPUS);
        // Cut every ring first: what cores record while the dump prints is left out.
        let mut heads = [0usize; kernel::config::MAX_CPUS];
        for (c, h) in heads.iter_mut().enumerate().take(cores) {
            *h = on::TRACER.ring(c).written();
        }
        println(format_args!("{}", TraceBegin { cores, ..*header }));
        let (mut records, mut lost) = (0, 0);
        for (c, &h) in heads.iter().enumerate().take(cores) {
            // The core's line follows its records: a record the writer overwrites while it is
            // printed is only known to be lost once it was reached.
            let s = on::TRACER.ring(c).visit(h, |r| {
                println(format_args!("{}", TraceRecord(&r.encode())));
            });
            println(format_args!(
                "{}",
                TraceCore {
                    core: c,
                    records: s.copied,
                    lost: s.lost,
                }
            ));
            records += s.copied;
            lost += s.lost;
        }
        println(format_args!("{}", TraceEnd { records, lost }));
    }
    #[cfg(not(feature = "trace"))]
    let _ = (header, &mut println);
}
