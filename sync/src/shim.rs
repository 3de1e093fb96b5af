//! The loom shim: one place that decides where atomics come from.
//!
//! Normal builds use `core::sync::atomic`; `RUSTFLAGS="--cfg kernel_locks_loom"` builds use loom's model-checked
//! atomics (the crossbeam pattern). Loom atomics cannot be built in a `const fn`, so constructors
//! are written once with [`maybe_const_fn!`] and arrays with [`array_init!`].

#[cfg(not(kernel_locks_loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
#[cfg(kernel_locks_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};

/// Called in every wait-loop iteration besides the lock's `Relax` strategy: under loom it tells
/// the model checker that this thread cannot progress until another one runs.
#[inline(always)]
pub(crate) fn wait_hint() {
    #[cfg(kernel_locks_loom)]
    loom::thread::yield_now();
}

/// Declares a function that is `const` in normal builds and plain under loom.
macro_rules! maybe_const_fn {
    ($(#[$attr:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(kernel_locks_loom))]
        $(#[$attr])* $vis const fn $($rest)*
        #[cfg(kernel_locks_loom)]
        $(#[$attr])* $vis fn $($rest)*
    };
}

/// `[expr; N]` for non-`Copy` values: an inline-const array normally, `from_fn` under loom.
macro_rules! array_init {
    ($n:expr, $value:expr) => {{
        #[cfg(not(kernel_locks_loom))]
        let array = [const { $value }; $n];
        #[cfg(kernel_locks_loom)]
        let array = core::array::from_fn(|_| $value);
        array
    }};
}

/// A plain (non-atomic) cell for data that one CPU writes and others read only once a
/// release/acquire pair orders the read after the write (happens-before): `core`'s
/// `UnsafeCell` normally, loom's under loom, which reports a read or write that no such pair
/// orders as a causality violation. The owner of the cell states the ordering at each access
/// (`# Safety`) and implements `Sync` for the type that holds it.
pub(crate) struct OrderedCell<T: Copy> {
    #[cfg(not(kernel_locks_loom))]
    cell: core::cell::UnsafeCell<T>,
    #[cfg(kernel_locks_loom)]
    cell: loom::cell::UnsafeCell<T>,
}

impl<T: Copy> OrderedCell<T> {
    maybe_const_fn! {
        /// A cell holding `value`.
        pub(crate) fn new(value: T) -> Self {
            Self {
                #[cfg(not(kernel_locks_loom))]
                cell: core::cell::UnsafeCell::new(value),
                #[cfg(kernel_locks_loom)]
                cell: loom::cell::UnsafeCell::new(value),
            }
        }
    }

    /// The value.
    ///
    /// # Safety
    /// Every write to the cell happens-before this read, or after it.
    #[inline(always)]
    pub(crate) unsafe fn get(&self) -> T {
        #[cfg(not(kernel_locks_loom))]
        // SAFETY: no write races with this read (the caller's promise).
        return unsafe { *self.cell.get() };
        #[cfg(kernel_locks_loom)]
        // SAFETY: as above; loom checks the promise.
        return self.cell.with(|p| unsafe { *p });
    }

    /// Replaces the value.
    ///
    /// # Safety
    /// Every other access to the cell happens-before this write, or after it.
    #[inline(always)]
    pub(crate) unsafe fn set(&self, value: T) {
        #[cfg(not(kernel_locks_loom))]
        // SAFETY: no access races with this write (the caller's promise).
        unsafe {
            *self.cell.get() = value
        };
        #[cfg(kernel_locks_loom)]
        // SAFETY: as above; loom checks the promise.
        self.cell.with_mut(|p| unsafe { *p = value });
    }
}
