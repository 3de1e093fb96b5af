//! Errors a system call returns to its caller (in result register 0).

/// Why a system call failed. The discriminant is the code placed in result register 0
/// (0 means success).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
#[repr(usize)]
pub enum Error {
    /// Register 0 does not name a system call.
    UnknownSyscall = 1,
    /// An argument register that must be zero is not, or an argument is malformed.
    InvalidArgument = 2,
    /// A number is out of its range (slot index, priority, rights bits, address, IRQ...).
    OutOfRange = 3,
    /// The capability slot is empty.
    InvalidCap = 4,
    /// The capability names an object of another type.
    WrongType = 5,
    /// The capability lacks a right the operation needs.
    MissingRight = 6,
    /// The destination slot is not empty.
    SlotOccupied = 7,
    /// No free object of that kind is left.
    NoFreeObject = 8,
    /// Reply without a reply capability.
    NoReply = 9,
    /// The virtual address is already mapped (by an earlier mapping call, or by the image loader).
    AlreadyMapped = 10,
    /// The virtual address is not mapped.
    NotMapped = 11,
    /// A fixed-capacity kernel table is full (no free memory-region object for a split).
    TableFull = 12,
    /// The core index is not one of this kernel's cores.
    InvalidCore = 13,
    /// The call was not executed: the thread was suspended, deleted or migrated by another core
    /// while it was entering the kernel. Retrying is safe.
    Interrupted = 14,
    /// The server holding this thread's reply capability dropped it (deleted, or received again
    /// without replying).
    ReplyDropped = 15,
    /// The object is already bound (IRQ to notification).
    AlreadyBound = 16,
    /// The kernel ran out of memory for the page tables a mapping needs; nothing was changed.
    OutOfMemory = 17,
    /// The object is still in use (an address space with live threads bound to it, a memory
    /// region with regions split from it).
    InUse = 18,
    /// The cache attribute does not fit the memory: device memory mapped as normal memory, or
    /// RAM mapped as device memory (or executable device memory).
    WrongMemoryKind = 19,
    /// The range overlaps a region already split from the same parent (memory is never
    /// reachable through two regions that are not derived from one another).
    Overlap = 20,
    /// The interrupt line does not exist on this machine, or the kernel uses it itself.
    IrqUnavailable = 21,
}

impl Error {
    /// Every error, in code order.
    pub const ALL: [Error; 21] = [
        Error::UnknownSyscall,
        Error::InvalidArgument,
        Error::OutOfRange,
        Error::InvalidCap,
        Error::WrongType,
        Error::MissingRight,
        Error::SlotOccupied,
        Error::NoFreeObject,
        Error::NoReply,
        Error::AlreadyMapped,
        Error::NotMapped,
        Error::TableFull,
        Error::InvalidCore,
        Error::Interrupted,
        Error::ReplyDropped,
        Error::AlreadyBound,
        Error::OutOfMemory,
        Error::InUse,
        Error::WrongMemoryKind,
        Error::Overlap,
        Error::IrqUnavailable,
    ];

    /// The code placed in result register 0.
    pub const fn code(self) -> usize {
        self as usize
    }

    /// The error with `code`, if any.
    pub fn from_code(code: usize) -> Option<Error> {
        Error::ALL.iter().copied().find(|e| e.code() == code)
    }
}
