//! Integration tests of the whole project, including (with issue 4) the hosted harness that runs
//! the kernel core on host threads.
//!
//! Status: the harness is not written yet; the lock tests live with the `sync` crate.
