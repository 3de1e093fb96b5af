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
    /// An interrupt line that has a handler object.
    IrqId,
    MAX_IRQS
);
pub use abi::CapSlot;
