//! Typed indices of kernel objects. Each can only be built in range, so indexing a table with
//! one never panics.

use abi::id_type;

use crate::config::*;

id_type!(
    /// Index of a thread control block.
    ThreadId,
    MAX_THREADS
);
id_type!(
    /// Index of an endpoint.
    EndpointId,
    MAX_ENDPOINTS
);
id_type!(
    /// Index of a notification.
    NotificationId,
    MAX_NOTIFICATIONS
);
id_type!(
    /// Index of an address space.
    AsId,
    MAX_ASPACES
);
id_type!(
    /// Index of a memory region.
    MemId,
    MAX_MEMS
);
id_type!(
    /// An interrupt line that has a handler object: a device line, or a core's timer-tick
    /// line ([`TICK_IRQ_BASE`](crate::config::TICK_IRQ_BASE)` + core`).
    IrqId,
    MAX_IRQS
);

impl IrqId {
    /// The core whose timer ticks this line carries, if it is a tick line.
    pub fn tick_core(self) -> Option<usize> {
        self.index().checked_sub(crate::config::TICK_IRQ_BASE)
    }
}
pub use abi::ids::AtomicId;
pub use abi::CapSlot;
