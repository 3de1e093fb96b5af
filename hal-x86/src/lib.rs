//! The x86_64 hardware abstraction layer (PVH boot, xAPIC SMP, paging, `syscall` entry).
//!
//! Status: empty. It arrives with issue 3; nothing here runs yet.
#![no_std]
