//! Typed indices. Each can only be built in range, so indexing a table with one never panics.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU16, Ordering};

/// Declares a typed index `$name` with valid values `0..$max` (for the kernel's object
/// tables too: `kernel::ids` declares its own with it).
///
/// The index is stored plus one in a `NonZeroU16`, so `Option<$name>` is two bytes with
/// `None` as zero: one load and one compare test it, one store writes `Some` (a separate
/// tag would cost a load and a store more at each use; on ARMv7 the halfword pair was
/// also recombined in registers). Indexing subtracts the one, which the compiler folds
/// into the table's address offset.
#[macro_export]
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $max:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(core::num::NonZeroU16);

        const _: () = assert!($max < u16::MAX as usize, "index + 1 must fit in a u16");

        impl $name {
            /// Upper bound (exclusive) of valid indices.
            pub const LIMIT: usize = $max;

            /// The id with index `i`, if `i` is in range.
            pub const fn new(i: usize) -> Option<Self> {
                if i < $max {
                    Some(Self::from_index(i))
                } else {
                    None
                }
            }

            /// The id of index `i`, which the caller has checked is below `$max`.
            #[inline(always)]
            const fn from_index(i: usize) -> Self {
                // SAFETY: `i < $max < u16::MAX` (the callers' check and the assertion
                // above), so `i + 1` is a non-zero `u16`. The sum is taken before the
                // truncation (and `i`'s range stated), so that `index` of the result folds
                // back to `i` with no instruction.
                unsafe {
                    core::hint::assert_unchecked(i < $max);
                    Self(core::num::NonZeroU16::new_unchecked((i + 1) as u16))
                }
            }

            /// The table index, always below [`LIMIT`](Self::LIMIT): indexing a table of
            /// that length with it compiles to no bounds check.
            #[inline(always)]
            pub const fn index(self) -> usize {
                let i = self.0.get() as usize - 1;
                // SAFETY: the field is private and set only by `from_index`, from indices
                // below `$max` only.
                unsafe { core::hint::assert_unchecked(i < $max) };
                i
            }

            /// Every id, in index order.
            pub fn all() -> impl Iterator<Item = Self> {
                (0..$max).map(Self::from_index)
            }
        }

        impl $crate::ids::Id for $name {
            #[inline(always)]
            fn to_raw(id: Option<Self>) -> u16 {
                match id {
                    Some(x) => x.0.get(),
                    None => 0,
                }
            }

            #[inline(always)]
            unsafe fn from_raw_unchecked(raw: u16) -> Option<Self> {
                // SAFETY: the caller's contract: `raw` is 0 or the representation of an id
                // of this type, whose index is below `$max`.
                unsafe { core::hint::assert_unchecked(raw as usize <= $max) };
                core::num::NonZeroU16::new(raw).map(Self)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.index()).finish()
            }
        }
    };
}

/// What [`AtomicId`] needs of an id type (every [`id_type!`] implements it).
pub trait Id: Copy {
    /// `id` as a halfword: 0 for `None`, the index plus one otherwise (the representation
    /// itself: no arithmetic, and a halfword load zero-extends it for indexing at no cost).
    fn to_raw(id: Option<Self>) -> u16;

    /// The optional id that [`to_raw`](Self::to_raw) made `raw` from, with no range check.
    ///
    /// # Safety
    /// `raw` was returned by `Self::to_raw`.
    unsafe fn from_raw_unchecked(raw: u16) -> Option<Self>;
}

/// An optional id in an atomic halfword (a core's current thread, say): loads and stores
/// it as [`Id::to_raw`] encodes it. Only [`store`](Self::store) writes it, so a load needs
/// no range check (an index read from a plain `AtomicUsize` was checked against the table's
/// length at every read, and on ARMv7 also zero-extended from 16 bits).
pub struct AtomicId<T> {
    raw: AtomicU16,
    _id: PhantomData<T>,
}

impl<T: Id> AtomicId<T> {
    /// An atomic holding `None`.
    pub const fn none() -> Self {
        Self {
            raw: AtomicU16::new(0),
            _id: PhantomData,
        }
    }

    /// The id it holds.
    #[inline(always)]
    pub fn load(&self, order: Ordering) -> Option<T> {
        // SAFETY: only `store` writes `raw`, with `T::to_raw` values (`none` writes 0,
        // which is `to_raw(None)`).
        unsafe { T::from_raw_unchecked(self.raw.load(order)) }
    }

    /// Sets the id it holds.
    #[inline(always)]
    pub fn store(&self, id: Option<T>, order: Ordering) {
        self.raw.store(T::to_raw(id), order);
    }
}

impl<T: Id + core::fmt::Debug> core::fmt::Debug for AtomicId<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.load(Ordering::Relaxed).fmt(f)
    }
}

use crate::limits::CSPACE_SLOTS;

id_type!(
    /// A capability slot index inside one thread's CSpace.
    CapSlot,
    CSPACE_SLOTS
);

#[cfg(test)]
mod tests {
    extern crate std;
    use std::format;

    use super::*;

    #[test]
    fn an_optional_id_is_two_bytes_and_none_is_zero() {
        assert_eq!(core::mem::size_of::<Option<CapSlot>>(), 2);
        assert_eq!(CapSlot::to_raw(None), 0);
        assert_eq!(CapSlot::to_raw(CapSlot::new(0)), 1);
    }

    #[test]
    fn ids_keep_their_index_order_and_print_it() {
        let ids: std::vec::Vec<_> = CapSlot::all().collect();
        assert_eq!(ids.len(), CSPACE_SLOTS);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id.index(), i);
            assert_eq!(Some(*id), CapSlot::new(i));
            assert_eq!(format!("{id:?}"), format!("CapSlot({i})"));
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(CapSlot::new(CSPACE_SLOTS), None);
    }

    #[test]
    fn an_atomic_id_holds_what_was_stored() {
        let a = AtomicId::<CapSlot>::none();
        assert_eq!(a.load(Ordering::Relaxed), None);
        for id in CapSlot::all() {
            a.store(Some(id), Ordering::Relaxed);
            assert_eq!(a.load(Ordering::Relaxed), Some(id));
        }
        a.store(None, Ordering::Relaxed);
        assert_eq!(a.load(Ordering::Relaxed), None);
        assert_eq!(format!("{a:?}"), "None");
    }
}
