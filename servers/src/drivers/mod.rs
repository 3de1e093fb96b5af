//! User-level device drivers: code that runs a device through its registers and DMA pages
//! mapped into the driver's address space, and owns nothing of the programs that use it.
//!
//! * [`virtio`]: the virtio-mmio transport and split virtqueues (the device-interrupt test's
//!   virtio-rng, the network server's virtio-net);
//! * [`nic`]: the network devices (virtio-net, the i.MX6 ENET) behind one interface, which
//!   the network server ([`crate::net`]) moves frames through.

pub mod nic;
pub mod virtio;
