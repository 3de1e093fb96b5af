//! Fixed capacities of the kernel's object tables. The kernel has no allocator: every table is
//! an array of this size inside [`Kernel`](crate::Kernel). The limits user programs see too
//! (cores, slots, priorities, page size, `USER_TOP`, message words) are the ABI's, re-exported.

pub use abi::limits::*;

/// Thread control blocks.
pub const MAX_THREADS: usize = 64;
/// Endpoints.
pub const MAX_ENDPOINTS: usize = 64;
/// Notifications.
pub const MAX_NOTIFICATIONS: usize = 64;
/// Address spaces.
pub const MAX_ASPACES: usize = 16;
/// Memory regions (objects of [`ObjRef::Memory`](crate::ObjRef::Memory)): the boot regions
/// given to the root task and every region split from them. Each region names a physical range
/// of any size, so this bounds the number of pieces memory is cut into, not its amount. Also the
/// largest mapping tag plus one ([`MapTag`](crate::hal::MapTag) is the region index + 1, and
/// x86_64 keeps it in the ten software bits of a page-table entry).
pub const MAX_MEMS: usize = 512;
