//! Padding and alignment so that per-CPU lock state never shares a cache line (or, on ARM, an
//! exclusive reservation granule) with another CPU's state.
//!
//! The alignment is a type parameter ([`Alignment`] marker types) so that one lock type can be
//! laid out for x86 cache lines or for the ARM exclusives reservation granule (ERG), as seL4 does
//! for its big kernel lock: a store by another core anywhere in the granule of a lock word clears
//! the local exclusive monitor and can starve an `LDREX`/`STREX` loop.

use core::fmt;
use core::ops::{Deref, DerefMut};

/// A zero-sized marker type whose alignment is the padding unit. Sealed: use the provided ones.
pub trait Alignment: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The alignment in bytes (equal to `align_of::<Self>()`).
    const BYTES: usize;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! alignment {
    ($(#[$doc:meta])* $name:ident, $bytes:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
        #[repr(align($bytes))]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Alignment for $name {
            const BYTES: usize = $bytes;
        }
    };
}

alignment!(
    /// 128 bytes: x86_64 and AArch64 (the adjacent-line prefetcher pulls lines in pairs, as in
    /// crossbeam's `CachePadded`).
    Align128, 128
);
alignment!(
    /// 64 bytes: a cache line on most other 64-bit cores.
    Align64, 64
);
alignment!(
    /// 32 bytes: the L1 and PL310 L2 line of the Cortex-A9 (i.MX6Q).
    Align32, 32
);
alignment!(
    /// 2 KiB: the largest ARMv7/ARMv8 exclusives reservation granule (seL4 aligns its lock to it).
    Align2K, 2048
);

/// The cache-line padding unit of the target architecture.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub type CacheLine = Align128;
/// The cache-line padding unit of the target architecture.
#[cfg(target_arch = "arm")]
pub type CacheLine = Align32;
/// The cache-line padding unit of the target architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
pub type CacheLine = Align64;

/// The exclusives reservation granule on ARM; a cache line elsewhere (x86 has no such granule).
#[cfg(any(target_arch = "arm", target_arch = "aarch64"))]
pub type Erg = Align2K;
/// The exclusives reservation granule on ARM; a cache line elsewhere (x86 has no such granule).
#[cfg(not(any(target_arch = "arm", target_arch = "aarch64")))]
pub type Erg = CacheLine;

/// `T` aligned (and therefore padded) to the alignment of `A`.
#[repr(C)]
#[derive(Default)]
pub struct Padded<T, A: Alignment = CacheLine> {
    _align: [A; 0],
    value: T,
}

/// `T` padded to the target's cache line.
pub type CachePadded<T> = Padded<T, CacheLine>;

impl<T, A: Alignment> Padded<T, A> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Self {
        Self { _align: [], value }
    }

    /// The value, mutably, in a `const fn` (where `DerefMut` cannot be called).
    pub(crate) const fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// Unwraps the value.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T, A: Alignment> Deref for Padded<T, A> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T, A: Alignment> DerefMut for Padded<T, A> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: fmt::Debug, A: Alignment> fmt::Debug for Padded<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Padded").field(&self.value).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, size_of};

    #[test]
    fn padding_rounds_up_to_the_alignment() {
        assert_eq!(align_of::<Padded<u8, Align128>>(), 128);
        assert_eq!(size_of::<Padded<u8, Align128>>(), 128);
        assert_eq!(size_of::<[Padded<u32, Align32>; 4]>(), 128);
        assert_eq!(align_of::<Padded<u64, Align2K>>(), Align2K::BYTES);
        assert_eq!(*Padded::<u8, Align64>::new(7), 7);
    }
}
