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
