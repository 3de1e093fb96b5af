//! User-level pagers: one per core, each owning a partition of physical memory; page faults
//! arrive as IPC.
//!
//! Status: empty. It arrives with the per-core pager work; nothing here runs yet.
#![no_std]
