//! The items that [`Mutex`](crate::Mutex) and [`RwLock`](crate::RwLock) and their guards share,
//! written once as macros that `mutex` and `rwlock` call.
//!
//! Both wrappers own a lock and an `UnsafeCell` of data, and every guard keeps a reference to
//! its wrapper and the CPU that took the lock. They differ in the lock trait they need, in the
//! modes a guard holds the lock in, and in how a guard releases it: those are the macros'
//! arguments. The structs themselves are declared by hand, so that their docs and the compiler's
//! messages about them (a guard is `!Send`) point at their modules.

/// The constructor, `into_inner`, `is_locked`, `get_mut`, `raw`, `Default` and `Debug` of a lock
/// wrapper `$wrapper<L, T>` with the fields `lock: L` and `data: UnsafeCell<T>`, over locks
/// `L: $bound`.
///
/// `$what` names the wrapper in the docs ("mutex", "lock"); `is_locked` and `raw` take their
/// docs from the caller, which says what "locked" means and what the raw lock is for.
macro_rules! wrapper_items {
    (
        $wrapper:ident: $bound:ident, $what:literal;
        $(#[$is_locked_doc:meta])* is_locked;
        $(#[$raw_doc:meta])* raw;
    ) => {
        impl<L, T> $wrapper<L, T> {
            /// `value` protected by `lock`, which must be unlocked.
            pub const fn new(lock: L, value: T) -> Self {
                Self {
                    lock,
                    data: core::cell::UnsafeCell::new(value),
                }
            }

            /// The protected value (no locking needed: `self` is owned).
            pub fn into_inner(self) -> T {
                self.data.into_inner()
            }
        }

        impl<L: $bound, T: ?Sized> $wrapper<L, T> {
            $(#[$is_locked_doc])*
            pub fn is_locked(&self) -> bool {
                self.lock.is_locked()
            }

            #[doc = concat!(
                "The protected value, through exclusive access to the ",
                $what,
                " (no locking needed)."
            )]
            pub fn get_mut(&mut self) -> &mut T {
                self.data.get_mut()
            }

            $(#[$raw_doc])*
            pub fn raw(&self) -> &L {
                &self.lock
            }
        }

        impl<L: Default, T: Default> Default for $wrapper<L, T> {
            fn default() -> Self {
                Self::new(L::default(), T::default())
            }
        }

        impl<L: $bound, T: ?Sized> core::fmt::Debug for $wrapper<L, T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                // The data is not shown: reading it would need the lock, and a CPU id.
                f.debug_struct(stringify!($wrapper))
                    .field("lock", &self.lock.name())
                    .field("locked", &self.lock.is_locked())
                    .finish_non_exhaustive()
            }
        }
    };
}

/// The items of a guard `$guard<'a, L, T>` with the fields `$field: &'a $wrapper<L, T>`,
/// `cpu: CpuId` and `_cpu_bound: CpuBound`, over locks `L: $bound`: the private constructor `new`, `cpu`,
/// `Sync` when `T: Sync`, `Deref`, `DerefMut` when the call ends in `mut`, `Debug`, and a `Drop`
/// that releases the hold with `$bound::$unlock`.
///
/// `$mode` says in the docs how the guard holds the lock ("", " shared", " exclusively").
macro_rules! guard_items {
    (
        $guard:ident { $field:ident: $wrapper:ident }: $bound:ident,
        $mode:literal, $unlock:ident $(, $mut:tt)?
    ) => {
        // SAFETY: a shared guard only gives out `&T`, so sharing it is sharing `&T`, safe when
        // `T: Sync`. The guard stays `!Send`.
        unsafe impl<L: $bound, T: ?Sized + Sync> Sync for $guard<'_, L, T> {}

        impl<'a, L: $bound, T: ?Sized> $guard<'a, L, T> {
            #[doc = concat!("Wraps a lock that `cpu` has just acquired", $mode, ".")]
            #[inline(always)]
            fn new($field: &'a $wrapper<L, T>, cpu: CpuId) -> Self {
                Self {
                    $field,
                    cpu,
                    _cpu_bound: crate::raw::CpuBound::new(),
                }
            }

            #[doc = concat!("The CPU that holds the lock", $mode, " through this guard.")]
            pub fn cpu(&self) -> CpuId {
                self.cpu
            }
        }

        impl<L: $bound, T: ?Sized> core::ops::Deref for $guard<'_, L, T> {
            type Target = T;

            #[inline(always)]
            fn deref(&self) -> &T {
                // SAFETY: the guard's CPU holds the lock (exclusively, or shared by readers
                // only), so no other CPU writes the data until the guard is dropped.
                unsafe { &*self.$field.data.get() }
            }
        }

        $(
            impl<L: $bound, T: ?Sized> core::ops::DerefMut for $guard<'_, L, T> {
                #[inline(always)]
                fn deref_mut(&mut self) -> &$mut T {
                    // SAFETY: the guard's CPU holds the lock exclusively, so no other CPU
                    // accesses the data until the guard is dropped; `&mut self` makes this the
                    // only reference through the guard.
                    unsafe { &mut *self.$field.data.get() }
                }
            }
        )?

        impl<L: $bound, T: ?Sized> Drop for $guard<'_, L, T> {
            #[inline]
            fn drop(&mut self) {
                // SAFETY: the guard was made by `new` right after `self.cpu` acquired the lock in
                // the guard's mode, it cannot have moved to another thread (`!Send`), and this is
                // its only release.
                unsafe { self.$field.lock.$unlock(self.cpu) };
            }
        }

        impl<L: $bound, T: ?Sized + core::fmt::Debug> core::fmt::Debug for $guard<'_, L, T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($guard))
                    .field("cpu", &self.cpu)
                    .field("data", &&**self)
                    .finish()
            }
        }
    };
}

/// Inside a wrapper's `impl`: the pair of acquisitions `$lock` (waits) and `$try_lock` (does not)
/// of `$guard`s, which take the raw lock with `$raw_lock` and `$raw_try_lock` for a CPU.
///
/// `$mode` says in the docs how the guard holds the lock ("", " shared", " exclusively").
macro_rules! acquire_items {
    (
        $mode:literal, $guard:ident:
        $lock:ident via $raw_lock:ident, $try_lock:ident via $raw_try_lock:ident
    ) => {
        #[doc = concat!(
            "Acquires the lock", $mode, " for `cpu`, waiting as long as needed; the guard ",
            "releases it on drop.\n\n",
            "# Panics\n",
            "If `cpu` is out of the lock's range (see ",
            "[`KernelLock::max_cpus`](crate::KernelLock::max_cpus))."
        )]
        #[inline]
        #[track_caller]
        pub fn $lock(&self, cpu: CpuId) -> $guard<'_, L, T> {
            self.lock.$raw_lock(cpu);
            $guard::new(self, cpu)
        }

        #[doc = concat!(
            "Acquires the lock", $mode, " for `cpu` if that is possible without waiting; the ",
            "guard releases it on drop.\n\n",
            "# Panics\n",
            "If `cpu` is out of the lock's range."
        )]
        #[inline]
        #[track_caller]
        pub fn $try_lock(&self, cpu: CpuId) -> Option<$guard<'_, L, T>> {
            self.lock.$raw_try_lock(cpu).then(|| $guard::new(self, cpu))
        }
    };
}
