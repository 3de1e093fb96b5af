//! The pager protocol: typed messages and their encoding in the kernel's message words.
//!
//! An IPC message is [`abi::limits::MSG_WORDS`] (4) words; word 0 is the label, as in the kernel's own
//! fault message ([`abi::FAULT_LABEL`]: address, 1 for a write, thread index), which a page
//! fault request *is*, so the kernel's fault IPC decodes here unchanged. Replies use the same
//! shape. Decoding checks every word (unknown labels, out-of-range values, unaligned addresses,
//! non-zero unused words) and returns [`DecodeError`]: a malformed message from a client gets an
//! error reply, never a panic, and the pager's state is untouched.

use abi::{limits::MSG_WORDS, Msg, FAULT_LABEL};

use crate::alloc::{Algorithm, AllocError};
use crate::range::PAGE_SIZE;

/// Labels of the pager protocol (word 0). The fault label is the kernel's.
pub mod label {
    /// Page fault (from the kernel on a thread's behalf): address, write, thread.
    pub const PAGE_FAULT: usize = abi::FAULT_LABEL;
    /// Explicit free: first frame, number of pages.
    pub const FREE: usize = 0x9A01;
    /// Set the allocation algorithm: 0 AVL, 1 buddy.
    pub const SET_ALGORITHM: usize = 0x9A02;
    /// Statistics request.
    pub const STATS: usize = 0x9A03;
    /// Memory low (pager to pager): the asking pager, its node, pages wanted.
    pub const MEMORY_LOW: usize = 0x9A04;
    /// Memory return (pager to pager): the returning pager, first frame, pages.
    pub const MEMORY_RETURN: usize = 0x9A05;
    /// Initialisation (loader to pager): the pager's core, its node, number of memory regions.
    pub const INIT: usize = 0x9A06;
    /// Client to pager: unmap and free pages it mapped for the client.
    pub const FREE_PAGES: usize = 0x9A07;
    /// Reply: success.
    pub const OK: usize = 0;
    /// Reply: map a frame at a page: page address, frame.
    pub const MAP: usize = 0x9B01;
    /// Reply: statistics: free pages, owned pages, faults served and algorithm in word 3.
    pub const STATS_REPLY: usize = 0x9B02;
    /// Reply: memory granted to a memory-low request: first frame, pages.
    pub const GRANT: usize = 0x9B03;
    /// Reply: an error code.
    pub const ERROR: usize = 0x9BFF;
}

/// Why a message could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Word 0 names no message of this direction.
    UnknownLabel,
    /// A word is out of range, unaligned, or non-zero where unused.
    BadArgument,
}

/// A request to a pager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// A thread faulted at `addr`.
    PageFault {
        /// Faulting virtual address (any byte of the page).
        addr: usize,
        /// Whether the access was a write.
        write: bool,
        /// The faulting thread's index.
        thread: usize,
    },
    /// Free `pages` frames from `frame` on.
    Free {
        /// First frame.
        frame: usize,
        /// Number of frames (at least 1).
        pages: usize,
    },
    /// Unmap `pages` pages from the page-aligned virtual address `addr` on, which this pager
    /// mapped for the caller, and free their frames (a client knows its pages by address, not by
    /// frame).
    FreePages {
        /// First page (page-aligned).
        addr: usize,
        /// Number of pages (at least 1).
        pages: usize,
    },
    /// Switch the allocation algorithm.
    SetAlgorithm(Algorithm),
    /// Report statistics.
    Stats,
    /// Another pager is short of memory.
    MemoryLow {
        /// The asking pager.
        from: usize,
        /// Its memory node.
        node: usize,
        /// How many pages it wants (at least 1).
        pages: usize,
    },
    /// Another pager gives back memory it borrowed.
    MemoryReturn {
        /// The returning pager.
        from: usize,
        /// First frame.
        frame: usize,
        /// Number of frames (at least 1).
        pages: usize,
    },
    /// The loader's initialisation message.
    Init {
        /// The core the pager serves.
        core: usize,
        /// That core's memory node.
        node: usize,
        /// How many memory region capabilities follow in the pager's CSpace (at least 1).
        regions: usize,
    },
}

/// Pager statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Free pages.
    pub free: usize,
    /// Owned pages (free and allocated).
    pub owned: usize,
    /// Page faults served.
    pub faults: usize,
    /// The algorithm running.
    pub algorithm: Algorithm,
}

/// An error a pager replies with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum PagerError {
    /// The request did not decode.
    Malformed = 1,
    /// No free memory.
    OutOfMemory = 2,
    /// The pager's bookkeeping is full.
    OutOfCapacity = 3,
    /// A page freed is not this pager's.
    NotOwned = 4,
    /// A page freed is already free.
    DoubleFree = 5,
    /// The request makes no sense here (wrong direction, or a range that is allocated).
    Unexpected = 6,
}

impl PagerError {
    fn from_code(code: usize) -> Option<Self> {
        use PagerError::*;
        [
            Malformed,
            OutOfMemory,
            OutOfCapacity,
            NotOwned,
            DoubleFree,
            Unexpected,
        ]
        .into_iter()
        .find(|e| *e as usize == code)
    }
}

impl From<AllocError> for PagerError {
    fn from(e: AllocError) -> Self {
        match e {
            AllocError::Invalid => PagerError::Malformed,
            AllocError::OutOfMemory | AllocError::NoContiguousRun => PagerError::OutOfMemory,
            AllocError::OutOfCapacity => PagerError::OutOfCapacity,
            AllocError::DoubleFree => PagerError::DoubleFree,
            AllocError::NotOwned => PagerError::NotOwned,
            AllocError::AlreadyOwned | AllocError::Busy => PagerError::Unexpected,
        }
    }
}

impl From<DecodeError> for PagerError {
    fn from(_: DecodeError) -> Self {
        PagerError::Malformed
    }
}

/// A pager's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Done.
    Ok,
    /// Map `frame` at `page` (page-aligned).
    Map {
        /// Virtual page address.
        page: usize,
        /// Physical frame number.
        frame: usize,
    },
    /// Statistics.
    Stats(Stats),
    /// Memory handed over: `pages` frames from `frame`.
    Grant {
        /// First frame.
        frame: usize,
        /// Number of frames.
        pages: usize,
    },
    /// The request failed; nothing changed.
    Error(PagerError),
}

fn algorithm_code(a: Algorithm) -> usize {
    match a {
        Algorithm::Avl => 0,
        Algorithm::Buddy => 1,
    }
}

fn algorithm_from(code: usize) -> Result<Algorithm, DecodeError> {
    match code {
        0 => Ok(Algorithm::Avl),
        1 => Ok(Algorithm::Buddy),
        _ => Err(DecodeError::BadArgument),
    }
}

fn bool_from(word: usize) -> Result<bool, DecodeError> {
    match word {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(DecodeError::BadArgument),
    }
}

/// A run of frames must be non-empty and must not wrap around.
fn range_ok(frame: usize, pages: usize) -> Result<(), DecodeError> {
    match frame.checked_add(pages) {
        Some(_) if pages > 0 => Ok(()),
        _ => Err(DecodeError::BadArgument),
    }
}

fn unused(words: &[usize]) -> Result<(), DecodeError> {
    if words.iter().all(|w| *w == 0) {
        Ok(())
    } else {
        Err(DecodeError::BadArgument)
    }
}

const _: () = assert!(MSG_WORDS == 4, "the encoding below uses four words");

impl Request {
    /// The message words.
    pub fn encode(&self) -> Msg {
        match *self {
            Request::PageFault {
                addr,
                write,
                thread,
            } => [FAULT_LABEL, addr, write as usize, thread],
            Request::Free { frame, pages } => [label::FREE, frame, pages, 0],
            Request::FreePages { addr, pages } => [label::FREE_PAGES, addr, pages, 0],
            Request::SetAlgorithm(a) => [label::SET_ALGORITHM, algorithm_code(a), 0, 0],
            Request::Stats => [label::STATS, 0, 0, 0],
            Request::MemoryLow { from, node, pages } => [label::MEMORY_LOW, from, node, pages],
            Request::MemoryReturn { from, frame, pages } => {
                [label::MEMORY_RETURN, from, frame, pages]
            }
            Request::Init {
                core,
                node,
                regions,
            } => [label::INIT, core, node, regions],
        }
    }

    /// Decodes message words, checking every word.
    pub fn decode(msg: &Msg) -> Result<Self, DecodeError> {
        let [l, a, b, c] = *msg;
        match l {
            FAULT_LABEL => Ok(Request::PageFault {
                addr: a,
                write: bool_from(b)?,
                thread: c,
            }),
            label::FREE => {
                range_ok(a, b)?;
                unused(&[c])?;
                Ok(Request::Free { frame: a, pages: b })
            }
            label::FREE_PAGES if a % PAGE_SIZE == 0 => {
                range_ok(a / PAGE_SIZE, b)?;
                unused(&[c])?;
                Ok(Request::FreePages { addr: a, pages: b })
            }
            label::FREE_PAGES => Err(DecodeError::BadArgument),
            label::SET_ALGORITHM => {
                unused(&[b, c])?;
                Ok(Request::SetAlgorithm(algorithm_from(a)?))
            }
            label::STATS => {
                unused(&[a, b, c])?;
                Ok(Request::Stats)
            }
            label::MEMORY_LOW if c > 0 => Ok(Request::MemoryLow {
                from: a,
                node: b,
                pages: c,
            }),
            label::MEMORY_RETURN => {
                range_ok(b, c)?;
                Ok(Request::MemoryReturn {
                    from: a,
                    frame: b,
                    pages: c,
                })
            }
            label::INIT if c > 0 => Ok(Request::Init {
                core: a,
                node: b,
                regions: c,
            }),
            label::MEMORY_LOW | label::INIT => Err(DecodeError::BadArgument),
            _ => Err(DecodeError::UnknownLabel),
        }
    }
}

impl Reply {
    /// The message words.
    pub fn encode(&self) -> Msg {
        match *self {
            Reply::Ok => [label::OK, 0, 0, 0],
            Reply::Map { page, frame } => [label::MAP, page, frame, 0],
            Reply::Stats(s) => [
                label::STATS_REPLY,
                s.free,
                s.owned,
                s.faults << 1 | algorithm_code(s.algorithm),
            ],
            Reply::Grant { frame, pages } => [label::GRANT, frame, pages, 0],
            Reply::Error(e) => [label::ERROR, e as usize, 0, 0],
        }
    }

    /// Decodes message words, checking every word.
    pub fn decode(msg: &Msg) -> Result<Self, DecodeError> {
        let [l, a, b, c] = *msg;
        match l {
            label::OK => {
                unused(&[a, b, c])?;
                Ok(Reply::Ok)
            }
            label::MAP if a % PAGE_SIZE == 0 => {
                unused(&[c])?;
                Ok(Reply::Map { page: a, frame: b })
            }
            label::STATS_REPLY if b >= a => Ok(Reply::Stats(Stats {
                free: a,
                owned: b,
                faults: c >> 1,
                algorithm: algorithm_from(c & 1)?,
            })),
            label::GRANT => {
                range_ok(a, b)?;
                unused(&[c])?;
                Ok(Reply::Grant { frame: a, pages: b })
            }
            label::ERROR => {
                unused(&[b, c])?;
                PagerError::from_code(a)
                    .map(Reply::Error)
                    .ok_or(DecodeError::BadArgument)
            }
            label::MAP | label::STATS_REPLY => Err(DecodeError::BadArgument),
            _ => Err(DecodeError::UnknownLabel),
        }
    }
}
