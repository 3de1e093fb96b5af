//! Typed indices. Each can only be built in range, so indexing a table with one never panics.

/// Declares a typed index `$name` with valid values `0..$max` (for the kernel's object
/// tables too: `kernel::ids` declares its own with it).
#[macro_export]
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

            /// The table index, always below [`LIMIT`](Self::LIMIT): indexing a table of
            /// that length with it compiles to no bounds check.
            #[inline(always)]
            pub const fn index(self) -> usize {
                let i = self.0 as usize;
                // SAFETY: the field is private and set only by `new` and `all`, both of which
                // build indices below `$max` only.
                unsafe { core::hint::assert_unchecked(i < $max) };
                i
            }

            /// Every id, in index order.
            pub fn all() -> impl Iterator<Item = Self> {
                (0..$max).map(|i| Self(i as u16))
            }
        }
    };
}

use crate::limits::CSPACE_SLOTS;

id_type!(
    /// A capability slot index inside one thread's CSpace.
    CapSlot,
    CSPACE_SLOTS
);
