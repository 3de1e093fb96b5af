//! Typed indices of kernel objects. Each can only be built in range, so indexing a table with
//! one never panics.

use crate::config::*;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $max:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub struct $name(u16);

        impl $name {
            /// Upper bound (exclusive) of valid indices.
            pub const LIMIT: usize = $max;

            /// The id with index `i`, if `i` is in range.
            pub const fn new(i: usize) -> Option<Self> {
                if i < $max {
                    Some(Self(i as u16))
                } else {
                    None
                }
            }

            /// The table index.
            pub const fn index(self) -> usize {
                self.0 as usize
            }

            /// Every id, in index order.
            pub fn all() -> impl Iterator<Item = Self> {
                (0..$max).map(|i| Self(i as u16))
            }
        }
    };
}

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
id_type!(
    /// A capability slot index inside one thread's CSpace.
    CapSlot,
    CSPACE_SLOTS
);
