//! The loom shim: where atomics and cells come from.
//!
//! Normal builds use `core`; `RUSTFLAGS="--cfg frame_ring_loom"` builds use loom's
//! model-checked atomics and its `UnsafeCell`, which reports a slot read while it is written
//! (the crossbeam pattern). `core`'s cell gets loom's `with` / `with_mut` API here so that the
//! ring is written once for both.

#[cfg(not(frame_ring_loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, Ordering};
#[cfg(frame_ring_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, Ordering};

#[cfg(frame_ring_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `core::cell::UnsafeCell` with loom's closure API.
#[cfg(not(frame_ring_loom))]
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(frame_ring_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        UnsafeCell(core::cell::UnsafeCell::new(v))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
