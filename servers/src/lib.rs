//! User-level programs run by the kernel: the root task, the IPC demo, benchmarks and test suites.
//!
//! Status: empty. The first programs arrive with issue 3; nothing here runs yet.
#![no_std]
