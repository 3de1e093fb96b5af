//! The architecture-neutral microkernel core: capabilities, IPC, scheduling, generic over the
//! locking strategy (big kernel lock over any `sync::KernelLock`, fine-grained, RTM elision, none).
//!
//! Status: empty. The object model and system calls arrive with issue 4; nothing here runs yet.
#![no_std]
