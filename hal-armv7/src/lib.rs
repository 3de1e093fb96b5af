//! The ARMv7-A hardware abstraction layer (Cortex-A9 MPCore on the i.MX6Q Sabre Lite, QEMU virt).
//!
//! Status: empty. It arrives with issue 5; nothing here runs yet.
#![no_std]
