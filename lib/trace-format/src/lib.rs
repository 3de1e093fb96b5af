//! The kernel's lock-trace format: one fixed-size record per kernel entry, a versioned file
//! header, and the per-core ring buffer ([`ring`]) the kernel records into.
//!
//! Why a crate of its own: the kernel writes this format on its hot path and the host tools
//! (the `sim` crate's analysis and simulator, `cargo xtask trace locks --image`) read it, so the
//! format sits between them and the kernel depends on nothing of the host side. It is `no_std`
//! and allocation-free except [`Trace`] (a whole trace in memory), which needs the `std`
//! feature (on by default; the kernel builds the crate without it).
//!
//! Why this shape: the kernel writes records on its hot path (the thesis measured ~21% added to a
//! null system call for a 3-word entry), so a record is a fixed 112-byte block that is filled with
//! plain stores and never allocates; only the entry timestamp is absolute, the four later
//! timestamps are 32-bit deltas from it (a kernel entry lasts far less than 2^32 cycles). Every
//! field sits inside one aligned 32-bit word, so the layout is defined once as 28 words
//! ([`Record::put_words`]) that the kernel stores straight into its ring, one store per word on
//! x86_64 and ARMv7 alike; the bytes of a file are those words' little-endian bytes. The file
//! is little-endian on both architectures so that a trace dumped from ARMv7 reads the same on
//! an x86 host, and the header carries the timestamp frequency and the core count because the
//! simulator needs both (cycles to seconds, and the `id mod recorded cores` row mapping).
//!
//! File layout (all integers little-endian):
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `LKTRACE\0` |
//! | 8 | 2 | format version ([`VERSION`]) |
//! | 10 | 2 | record size ([`RECORD_SIZE`]) |
//! | 12 | 2 | cores the trace was recorded on |
//! | 14 | 2 | lock strategy of the recording kernel ([`Strategy`]) |
//! | 16 | 8 | timestamp frequency in Hz |
//! | 24 | 8 | number of records that follow |
//! | 32 | 112 × n | records ([`Record::encode`]) |
//!
//! This is version 2: six object-lock slots per record (a cross-core IPC under the fine-grained
//! kernel takes the endpoint, two TCBs and two run queues) and [`FLAG_OBJECTS_TRUNCATED`].
//! Version 1 files (88-byte records with four slots) are not read: re-record them.

#![no_std]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
use std::vec::Vec;

use core::fmt;

pub mod ring;

/// The eight bytes every trace file starts with.
pub const MAGIC: [u8; 8] = *b"LKTRACE\0";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 2;
/// Size of the header in bytes.
pub const HEADER_SIZE: usize = 32;
/// Size of one encoded [`Record`] in bytes.
pub const RECORD_SIZE: usize = 112;
/// How many object locks one record can name: seL4's fine-grained IPC takes two TCB locks and an
/// endpoint lock; ours also takes the run queue of each core it touches (one on the same core,
/// two when the woken thread runs on another), and one slot is spare. An entry that took more
/// distinct objects keeps the first ones and sets [`FLAG_OBJECTS_TRUNCATED`].
pub const MAX_OBJECTS: usize = 6;
/// Size of one encoded [`Record`] in 32-bit words ([`Record::to_words`]).
pub const RECORD_WORDS: usize = RECORD_SIZE / 4;
/// The word at which the object locks start (byte 40), three words each.
const OBJECTS_WORD: usize = 10;
// `Record::put_words`: 10 words of fields, then three per object slot.
const _: () = assert!(RECORD_WORDS == OBJECTS_WORD + 3 * MAX_OBJECTS);
const _: () = assert!(RECORD_SIZE == 4 * RECORD_WORDS);

/// What brought the core into the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryKind {
    /// A system call; [`Record::number`] is its call number.
    #[default]
    Syscall,
    /// An interrupt; [`Record::number`] is the interrupt line.
    Interrupt,
    /// A user fault (page fault, undefined instruction); [`Record::number`] is the vector.
    Fault,
}

impl EntryKind {
    fn to_byte(self) -> u8 {
        match self {
            EntryKind::Syscall => 0,
            EntryKind::Interrupt => 1,
            EntryKind::Fault => 2,
        }
    }

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(EntryKind::Syscall),
            1 => Some(EntryKind::Interrupt),
            2 => Some(EntryKind::Fault),
            _ => None,
        }
    }

    /// A short name for reports (`syscall`, `irq`, `fault`).
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Syscall => "syscall",
            EntryKind::Interrupt => "irq",
            EntryKind::Fault => "fault",
        }
    }
}

/// The lock strategy of the kernel that recorded a trace (informational: the simulator can replay
/// any trace under any strategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One big kernel lock.
    BigLock,
    /// Per-object locks.
    FineGrained,
    /// RTM lock elision over a fallback lock.
    Rtm,
    /// No lock at all.
    None,
}

impl Strategy {
    fn to_u16(self) -> u16 {
        match self {
            Strategy::BigLock => 0,
            Strategy::FineGrained => 1,
            Strategy::Rtm => 2,
            Strategy::None => 3,
        }
    }

    fn from_u16(v: u16) -> Option<Self> {
        match v {
            0 => Some(Strategy::BigLock),
            1 => Some(Strategy::FineGrained),
            2 => Some(Strategy::Rtm),
            3 => Some(Strategy::None),
            _ => None,
        }
    }

    /// The strategy a replaying tool replays this recording kernel's trace with, in the tool's
    /// own terms: its `From<Strategy>` (the `sim` crate's `LockStrategy` says which).
    pub fn replayed_as<L: From<Strategy>>(self) -> L {
        L::from(self)
    }
}

/// How a hardware transaction ended (RTM kernels only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RtmOutcome {
    /// Not an RTM kernel, or the entry took no transaction.
    #[default]
    NotUsed,
    /// The transaction committed after [`Record::rtm_retries`] aborts.
    Committed,
    /// Every attempt aborted and the entry ran under the fallback lock.
    FellBack,
}

impl RtmOutcome {
    fn to_byte(self) -> u8 {
        match self {
            RtmOutcome::NotUsed => 0,
            RtmOutcome::Committed => 1,
            RtmOutcome::FellBack => 2,
        }
    }

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(RtmOutcome::NotUsed),
            1 => Some(RtmOutcome::Committed),
            2 => Some(RtmOutcome::FellBack),
            _ => None,
        }
    }
}

/// One object lock a fine-grained kernel took during an entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectLock {
    /// The object's identity (for instance its address or capability slot); only equality matters.
    pub id: u32,
    /// When the lock was acquired, in cycles after [`Record::entry`].
    pub acquired: u32,
    /// How long the core waited for it, in cycles (the request was at `acquired - wait`).
    pub wait: u32,
}

/// [`Record::flags`] bit: the lock was held by another core at the first attempt.
pub const FLAG_CONTENDED: u8 = 1;
/// [`Record::flags`] bit: the entry took more distinct object locks than [`MAX_OBJECTS`]; the
/// record names the first ones.
pub const FLAG_OBJECTS_TRUNCATED: u8 = 2;
const KNOWN_FLAGS: u8 = FLAG_CONTENDED | FLAG_OBJECTS_TRUNCATED;

/// One kernel entry. Timestamps are in cycles of the header's frequency.
///
/// Invariant checked by [`Record::decode`] (and by [`Record::validate`]):
/// `lock_requested <= lock_acquired <= lock_released <= exit`, all relative to `entry`, and every
/// object lock acquired inside `[lock_acquired .. lock_released]` after its request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Kernel entry timestamp (absolute).
    pub entry: u64,
    /// Cycles after `entry` when the (big) lock was requested.
    pub lock_requested: u32,
    /// Cycles after `entry` when it was acquired.
    pub lock_acquired: u32,
    /// Cycles after `entry` just before it was released.
    pub lock_released: u32,
    /// Cycles after `entry` at kernel exit.
    pub exit: u32,
    /// The thread that entered.
    pub thread: u32,
    /// The core it entered on.
    pub core: u16,
    /// System call number, interrupt line or fault vector (see `kind`).
    pub number: u16,
    /// What brought the core into the kernel.
    pub kind: EntryKind,
    /// Cores in the kernel at entry, this one included.
    pub in_kernel: u8,
    /// [`FLAG_CONTENDED`] and future flags.
    pub flags: u8,
    /// How the transaction ended (RTM kernels).
    pub rtm_outcome: RtmOutcome,
    /// Aborts before commit or fallback.
    pub rtm_retries: u8,
    /// The last abort's cause bits (the low byte of Intel's RTM status word).
    pub rtm_abort_cause: u8,
    /// Number of valid entries in `objects`.
    pub object_count: u8,
    /// Object locks taken, in the order first taken (fine-grained kernels): each distinct
    /// object once, with its first acquisition; a later re-acquisition of the same object in
    /// the same entry (the kernel releases and retakes a TCB lock between phases) is not
    /// recorded, its wait stays inside the held time.
    pub objects: [ObjectLock; MAX_OBJECTS],
}

/// Why a trace could not be read or a record could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// The input ended early: `needed` bytes were required, `have` were present.
    Truncated {
        /// Bytes the header says the trace has (or the header size).
        needed: usize,
        /// Bytes present.
        have: usize,
    },
    /// The input does not start with [`MAGIC`].
    BadMagic,
    /// A format version this crate does not read.
    UnsupportedVersion(u16),
    /// The header's record size is not [`RECORD_SIZE`].
    BadRecordSize(u16),
    /// A header field is out of range.
    BadHeader(&'static str),
    /// Record `index` is malformed.
    Corrupt {
        /// Position of the record in the trace.
        index: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Bytes follow the last record the header announces.
    TrailingBytes(usize),
    /// The output buffer is too small.
    BufferTooSmall,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Truncated { needed, have } => {
                write!(f, "trace truncated: {needed} bytes needed, {have} present")
            }
            TraceError::BadMagic => write!(f, "not a kernel trace (bad magic)"),
            TraceError::UnsupportedVersion(v) => {
                write!(f, "trace format version {v} (this reader knows {VERSION})")
            }
            TraceError::BadRecordSize(s) => {
                write!(f, "record size {s} in the header (expected {RECORD_SIZE})")
            }
            TraceError::BadHeader(why) => write!(f, "bad trace header: {why}"),
            TraceError::Corrupt { index, reason } => write!(f, "record {index} corrupt: {reason}"),
            TraceError::TrailingBytes(n) => write!(f, "{n} bytes after the last record"),
            TraceError::BufferTooSmall => write!(f, "output buffer too small"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for TraceError {}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The trace file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Cores the trace was recorded on (the simulator's "actual cores").
    pub cores: u16,
    /// Lock strategy of the recording kernel.
    pub strategy: Strategy,
    /// Timestamp frequency in Hz (cycles per second).
    pub frequency_hz: u64,
    /// Number of records that follow.
    pub records: u64,
}

impl Header {
    /// Encodes the header into its 32 bytes.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0; HEADER_SIZE];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10..12].copy_from_slice(&(RECORD_SIZE as u16).to_le_bytes());
        b[12..14].copy_from_slice(&self.cores.to_le_bytes());
        b[14..16].copy_from_slice(&self.strategy.to_u16().to_le_bytes());
        b[16..24].copy_from_slice(&self.frequency_hz.to_le_bytes());
        b[24..32].copy_from_slice(&self.records.to_le_bytes());
        b
    }

    /// Decodes and checks a header from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Header, TraceError> {
        if b.len() < HEADER_SIZE {
            // Say "bad magic" rather than "truncated" for something that is not a trace at all.
            let n = b.len().min(MAGIC.len());
            if b[..n] != MAGIC[..n] {
                return Err(TraceError::BadMagic);
            }
            return Err(TraceError::Truncated {
                needed: HEADER_SIZE,
                have: b.len(),
            });
        }
        if b[0..8] != MAGIC {
            return Err(TraceError::BadMagic);
        }
        let version = u16_at(b, 8);
        if version != VERSION {
            return Err(TraceError::UnsupportedVersion(version));
        }
        let size = u16_at(b, 10);
        if size as usize != RECORD_SIZE {
            return Err(TraceError::BadRecordSize(size));
        }
        let cores = u16_at(b, 12);
        if cores == 0 {
            return Err(TraceError::BadHeader("zero cores"));
        }
        let strategy =
            Strategy::from_u16(u16_at(b, 14)).ok_or(TraceError::BadHeader("unknown strategy"))?;
        let frequency_hz = u64_at(b, 16);
        if frequency_hz == 0 {
            return Err(TraceError::BadHeader("zero timestamp frequency"));
        }
        Ok(Header {
            cores,
            strategy,
            frequency_hz,
            records: u64_at(b, 24),
        })
    }
}

impl Record {
    /// The all-zero record (a `const` [`Default`]: a syscall 0 on core 0 at time 0).
    pub const EMPTY: Record = Record {
        entry: 0,
        lock_requested: 0,
        lock_acquired: 0,
        lock_released: 0,
        exit: 0,
        thread: 0,
        core: 0,
        number: 0,
        kind: EntryKind::Syscall,
        in_kernel: 0,
        flags: 0,
        rtm_outcome: RtmOutcome::NotUsed,
        rtm_retries: 0,
        rtm_abort_cause: 0,
        object_count: 0,
        objects: [ObjectLock {
            id: 0,
            acquired: 0,
            wait: 0,
        }; MAX_OBJECTS],
    };

    /// Whether the lock was held by another core at the first attempt.
    pub fn contended(&self) -> bool {
        self.flags & FLAG_CONTENDED != 0
    }

    /// The valid object locks.
    pub fn object_locks(&self) -> &[ObjectLock] {
        &self.objects[..(self.object_count as usize).min(MAX_OBJECTS)]
    }

    /// Absolute exit timestamp.
    pub fn exit_at(&self) -> u64 {
        self.entry + u64::from(self.exit)
    }

    /// Cycles spent waiting for the (big) lock, including the lock's own entry latency.
    pub fn lock_wait(&self) -> u32 {
        self.lock_acquired - self.lock_requested
    }

    /// Cycles the (big) lock was held (acquire to just before release).
    pub fn lock_held(&self) -> u32 {
        self.lock_released - self.lock_acquired
    }

    /// Checks the record's internal consistency (what [`Record::decode`] checks after parsing).
    pub fn validate(&self) -> Result<(), &'static str> {
        if !(self.lock_requested <= self.lock_acquired
            && self.lock_acquired <= self.lock_released
            && self.lock_released <= self.exit)
        {
            return Err("timestamps out of order");
        }
        if self.object_count as usize > MAX_OBJECTS {
            return Err("too many object locks");
        }
        if self.flags & !KNOWN_FLAGS != 0 {
            return Err("unknown flag bits");
        }
        if self.entry.checked_add(u64::from(self.exit)).is_none() {
            return Err("exit timestamp overflows");
        }
        for o in self.object_locks() {
            if o.acquired < self.lock_acquired || o.acquired > self.lock_released {
                return Err("object lock acquired outside the locked section");
            }
            if o.wait > o.acquired {
                return Err("object lock wait starts before entry");
            }
        }
        if self.objects[self.object_count as usize..]
            .iter()
            .any(|o| *o != ObjectLock::default())
        {
            return Err("unused object slot not zero");
        }
        Ok(())
    }

    /// The record as its [`RECORD_WORDS`] 32-bit words: word `i` is bytes `4 i .. 4 i + 4` of
    /// [`Record::encode`], read as a little-endian `u32` ([`Record::put_words`] defines them).
    #[inline]
    pub fn to_words(&self) -> [u32; RECORD_WORDS] {
        let mut words = [0; RECORD_WORDS];
        self.put_words(|i, w| words[i] = w);
        words
    }

    /// Calls `put(i, word)` for each word `i` of [`Record::to_words`], in order. This is the one
    /// definition of the record layout (`to_words` and so [`Record::encode`] collect these
    /// words, [`Record::from_words`] reads them back).
    ///
    /// Why words, and why a callback: the kernel stores every record on its hot path into a
    /// ring of `AtomicU32` ([`crate::ring::Ring::record`]). Built from whole fields with shifts
    /// and ORs, each word is one load (or a few, for the packed bytes) and one store on both
    /// architectures; a byte array in between cost a byte store per byte and a reassembly per
    /// word on ARMv7 (`armv7a-none-eabi` does not merge them), over three times the
    /// instructions of the x86_64 path. Handing each word over as it is made, rather than a
    /// finished array, lets the ring store it at once: the compiler does not move the record's
    /// loads past the ring's atomic stores, so with an array it loads all 28 words first and
    /// spills most of them on ARMv7's few registers. No checks, as for `encode`.
    #[inline(always)]
    pub fn put_words(&self, mut put: impl FnMut(usize, u32)) {
        put(0, self.entry as u32);
        put(1, (self.entry >> 32) as u32);
        put(2, self.lock_requested);
        put(3, self.lock_acquired);
        put(4, self.lock_released);
        put(5, self.exit);
        put(6, self.thread);
        put(7, u32::from(self.core) | u32::from(self.number) << 16);
        put(
            8,
            u32::from(self.kind.to_byte())
                | u32::from(self.in_kernel) << 8
                | u32::from(self.flags) << 16
                | u32::from(self.rtm_outcome.to_byte()) << 24,
        );
        // The top byte (byte 39) is reserved, zero.
        put(
            9,
            u32::from(self.rtm_retries)
                | u32::from(self.rtm_abort_cause) << 8
                | u32::from(self.object_count) << 16,
        );
        for (k, o) in self.objects.iter().enumerate() {
            let at = OBJECTS_WORD + 3 * k;
            put(at, o.id);
            put(at + 1, o.acquired);
            put(at + 2, o.wait);
        }
    }

    /// Encodes the record into its [`RECORD_SIZE`] bytes: the little-endian bytes of
    /// [`Record::to_words`] (no checks: [`Record::decode`] rejects what is inconsistent).
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0; RECORD_SIZE];
        for (chunk, w) in b.chunks_exact_mut(4).zip(self.to_words()) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Decodes and validates one record from its bytes; `index` only labels the error.
    pub fn decode(b: &[u8; RECORD_SIZE], index: usize) -> Result<Record, TraceError> {
        let mut words = [0; RECORD_WORDS];
        for (w, chunk) in words.iter_mut().zip(b.chunks_exact(4)) {
            *w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        Record::from_words(&words, index)
    }

    /// Decodes and validates one record from its words (the inverse of [`Record::to_words`]);
    /// `index` only labels the error.
    pub fn from_words(w: &[u32; RECORD_WORDS], index: usize) -> Result<Record, TraceError> {
        let corrupt = |reason| TraceError::Corrupt { index, reason };
        let byte = |word: u32, i: u32| (word >> (8 * i)) as u8;
        let kind = EntryKind::from_byte(byte(w[8], 0)).ok_or(corrupt("unknown entry kind"))?;
        let rtm = RtmOutcome::from_byte(byte(w[8], 3)).ok_or(corrupt("unknown RTM outcome"))?;
        if byte(w[9], 3) != 0 {
            return Err(corrupt("reserved byte not zero"));
        }
        let object_count = byte(w[9], 2);
        if object_count as usize > MAX_OBJECTS {
            return Err(corrupt("too many object locks"));
        }
        let mut objects = [ObjectLock::default(); MAX_OBJECTS];
        for (o, ws) in objects.iter_mut().zip(w[OBJECTS_WORD..].chunks_exact(3)) {
            *o = ObjectLock {
                id: ws[0],
                acquired: ws[1],
                wait: ws[2],
            };
        }
        let r = Record {
            entry: u64::from(w[0]) | u64::from(w[1]) << 32,
            lock_requested: w[2],
            lock_acquired: w[3],
            lock_released: w[4],
            exit: w[5],
            thread: w[6],
            core: w[7] as u16,
            number: (w[7] >> 16) as u16,
            kind,
            in_kernel: byte(w[8], 1),
            flags: byte(w[8], 2),
            rtm_outcome: rtm,
            rtm_retries: byte(w[9], 0),
            rtm_abort_cause: byte(w[9], 1),
            object_count,
            objects,
        };
        r.validate().map_err(corrupt)?;
        Ok(r)
    }
}

/// Writes a header and then records into a caller-provided byte buffer (the kernel's dump path:
/// no allocation). [`Writer::finish`] patches the record count into the header.
pub struct Writer<'a> {
    buf: &'a mut [u8],
    header: Header,
    len: usize,
}

impl<'a> Writer<'a> {
    /// Starts a trace in `buf`; `header.records` is ignored and set by [`Writer::finish`].
    pub fn new(buf: &'a mut [u8], header: Header) -> Result<Self, TraceError> {
        if buf.len() < HEADER_SIZE {
            return Err(TraceError::BufferTooSmall);
        }
        Ok(Writer {
            buf,
            header: Header {
                records: 0,
                ..header
            },
            len: HEADER_SIZE,
        })
    }

    /// Appends one record.
    pub fn push(&mut self, r: &Record) -> Result<(), TraceError> {
        let end = self.len + RECORD_SIZE;
        if end > self.buf.len() {
            return Err(TraceError::BufferTooSmall);
        }
        self.buf[self.len..end].copy_from_slice(&r.encode());
        self.len = end;
        self.header.records += 1;
        Ok(())
    }

    /// Writes the header and returns the number of bytes of the finished trace.
    pub fn finish(self) -> usize {
        self.buf[..HEADER_SIZE].copy_from_slice(&self.header.encode());
        self.len
    }
}

/// Reads a trace from a byte slice without allocating: the header is checked up front (including
/// that the slice holds exactly the records it announces), records are decoded as iterated.
pub struct Reader<'a> {
    header: Header,
    body: &'a [u8],
    next: usize,
}

impl<'a> Reader<'a> {
    /// Checks the header and the length of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Result<Self, TraceError> {
        let header = Header::decode(bytes)?;
        let body = &bytes[HEADER_SIZE..];
        let needed = usize::try_from(header.records)
            .ok()
            .and_then(|n| n.checked_mul(RECORD_SIZE))
            // The whole file's size, header included, must be a `usize` too: the error below
            // reports it.
            .filter(|n| n.checked_add(HEADER_SIZE).is_some())
            .ok_or(TraceError::BadHeader("record count too large"))?;
        if body.len() < needed {
            return Err(TraceError::Truncated {
                needed: HEADER_SIZE + needed,
                have: bytes.len(),
            });
        }
        if body.len() > needed {
            return Err(TraceError::TrailingBytes(body.len() - needed));
        }
        Ok(Reader {
            header,
            body,
            next: 0,
        })
    }

    /// The trace's header.
    pub fn header(&self) -> Header {
        self.header
    }
}

impl Iterator for Reader<'_> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = self.next * RECORD_SIZE;
        let chunk: &[u8; RECORD_SIZE] = self.body.get(at..at + RECORD_SIZE)?.try_into().ok()?;
        let index = self.next;
        self.next += 1;
        Some(Record::decode(chunk, index).and_then(|r| {
            if r.core >= self.header.cores {
                Err(TraceError::Corrupt {
                    index,
                    reason: "core beyond the header's core count",
                })
            } else {
                Ok(r)
            }
        }))
    }
}

/// A whole trace in memory (host side).
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Cores the trace was recorded on.
    pub cores: u16,
    /// Lock strategy of the recording kernel.
    pub strategy: Strategy,
    /// Timestamp frequency in Hz.
    pub frequency_hz: u64,
    /// The records, in the order written (per core in time order; cores interleaved).
    pub records: Vec<Record>,
}

#[cfg(feature = "std")]
impl Trace {
    /// Encodes the trace (header and records).
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = Header {
            cores: self.cores,
            strategy: self.strategy,
            frequency_hz: self.frequency_hz,
            records: self.records.len() as u64,
        };
        let mut out = Vec::with_capacity(HEADER_SIZE + RECORD_SIZE * self.records.len());
        out.extend_from_slice(&header.encode());
        for r in &self.records {
            out.extend_from_slice(&r.encode());
        }
        out
    }

    /// Decodes and checks a whole trace.
    pub fn from_bytes(bytes: &[u8]) -> Result<Trace, TraceError> {
        let reader = Reader::new(bytes)?;
        let h = reader.header();
        let records = reader.collect::<Result<Vec<_>, _>>()?;
        Ok(Trace {
            cores: h.cores,
            strategy: h.strategy,
            frequency_hz: h.frequency_hz,
            records,
        })
    }

    /// The records of recorded core `core`, in time order (by entry timestamp; stable).
    pub fn core_records(&self, core: u16) -> Vec<Record> {
        let mut v: Vec<Record> = self
            .records
            .iter()
            .filter(|r| r.core == core)
            .copied()
            .collect();
        v.sort_by_key(|r| r.entry);
        v
    }

    /// The earliest entry timestamp (the start of the recorded run), or 0 for an empty trace.
    pub fn start(&self) -> u64 {
        self.records.iter().map(|r| r.entry).min().unwrap_or(0)
    }

    /// The latest exit timestamp (the end of the recorded run), or 0 for an empty trace.
    pub fn end(&self) -> u64 {
        self.records.iter().map(Record::exit_at).max().unwrap_or(0)
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::{format, vec, vec::Vec};

    fn sample(i: u32) -> Record {
        let mut objects = [ObjectLock::default(); MAX_OBJECTS];
        objects[0] = ObjectLock {
            id: 0xdead_0000 + i,
            acquired: 30,
            wait: 5,
        };
        objects[1] = ObjectLock {
            id: 7,
            acquired: 40,
            wait: 0,
        };
        Record {
            entry: 1_000_000_000_000 + u64::from(i) * 500,
            lock_requested: 10,
            lock_acquired: 25,
            lock_released: 90,
            exit: 120,
            thread: 42 + i,
            core: (i % 3) as u16,
            number: 9,
            kind: if i % 2 == 0 {
                EntryKind::Syscall
            } else {
                EntryKind::Interrupt
            },
            in_kernel: 2,
            flags: FLAG_CONTENDED,
            rtm_outcome: RtmOutcome::Committed,
            rtm_retries: 3,
            rtm_abort_cause: 0x04,
            object_count: 2,
            objects,
        }
    }

    fn sample_trace(n: u32) -> Trace {
        Trace {
            cores: 3,
            strategy: Strategy::FineGrained,
            frequency_hz: 2_400_000_000,
            records: (0..n).map(sample).collect(),
        }
    }

    #[test]
    fn round_trip_host() {
        let t = sample_trace(10);
        let bytes = t.to_bytes();
        assert_eq!(bytes.len(), HEADER_SIZE + 10 * RECORD_SIZE);
        assert_eq!(Trace::from_bytes(&bytes).unwrap(), t);
    }

    #[test]
    fn round_trip_through_the_no_alloc_writer() {
        let t = sample_trace(4);
        let mut buf = [0u8; HEADER_SIZE + 4 * RECORD_SIZE];
        let mut w = Writer::new(
            &mut buf,
            Header {
                cores: 3,
                strategy: Strategy::FineGrained,
                frequency_hz: 2_400_000_000,
                records: 999,
            },
        )
        .unwrap();
        for r in &t.records {
            w.push(r).unwrap();
        }
        assert_eq!(w.push(&t.records[0]), Err(TraceError::BufferTooSmall));
        let n = w.finish();
        assert_eq!(&buf[..n], &t.to_bytes()[..]);
    }

    #[test]
    fn is_little_endian() {
        let bytes = sample_trace(1).to_bytes();
        assert_eq!(&bytes[..8], b"LKTRACE\0");
        assert_eq!(&bytes[8..10], &[2, 0]);
        assert_eq!(&bytes[10..12], &[112, 0]);
        assert_eq!(&bytes[12..14], &[3, 0]);
        let entry = 1_000_000_000_000u64.to_le_bytes();
        assert_eq!(&bytes[HEADER_SIZE..HEADER_SIZE + 8], &entry);
    }

    /// Records that set every field to something distinct: each object-lock slot, both flags,
    /// every entry kind and RTM outcome, timestamps that use all 64 bits.
    fn varied() -> Vec<Record> {
        let mut out = vec![Record::EMPTY, sample(0), sample(1)];
        for n in 0..=MAX_OBJECTS {
            let mut objects = [ObjectLock::default(); MAX_OBJECTS];
            for (k, o) in objects.iter_mut().take(n).enumerate() {
                let k = k as u32;
                *o = ObjectLock {
                    id: 0x8765_4321 ^ (k << 24 | k),
                    acquired: 0x100 + 3 * k,
                    wait: 0x80 + k,
                };
            }
            out.push(Record {
                entry: 0xfedc_ba98_7654_3210 - u64::from(n as u32),
                lock_requested: 0x11,
                lock_acquired: 0x100,
                lock_released: 0x0123_4567,
                exit: 0x89ab_cdef,
                thread: 0xa1b2_c3d4,
                core: 0xfe01 - n as u16,
                number: 0x8002 + n as u16,
                kind: [EntryKind::Syscall, EntryKind::Interrupt, EntryKind::Fault][n % 3],
                in_kernel: 0xc3,
                flags: [0, FLAG_CONTENDED, FLAG_OBJECTS_TRUNCATED, KNOWN_FLAGS][n % 4],
                rtm_outcome: [
                    RtmOutcome::NotUsed,
                    RtmOutcome::Committed,
                    RtmOutcome::FellBack,
                ][n % 3],
                rtm_retries: 0xe7,
                rtm_abort_cause: 0x5a,
                object_count: n as u8,
                objects,
            });
        }
        for r in &out {
            r.validate().unwrap();
        }
        out
    }

    /// The byte layout as the format table gives it, field by field (independent of
    /// `to_words`, which `encode` is derived from).
    fn bytes_by_field(r: &Record) -> [u8; RECORD_SIZE] {
        let mut b = [0; RECORD_SIZE];
        b[0..8].copy_from_slice(&r.entry.to_le_bytes());
        b[8..12].copy_from_slice(&r.lock_requested.to_le_bytes());
        b[12..16].copy_from_slice(&r.lock_acquired.to_le_bytes());
        b[16..20].copy_from_slice(&r.lock_released.to_le_bytes());
        b[20..24].copy_from_slice(&r.exit.to_le_bytes());
        b[24..28].copy_from_slice(&r.thread.to_le_bytes());
        b[28..30].copy_from_slice(&r.core.to_le_bytes());
        b[30..32].copy_from_slice(&r.number.to_le_bytes());
        b[32] = r.kind.to_byte();
        b[33] = r.in_kernel;
        b[34] = r.flags;
        b[35] = r.rtm_outcome.to_byte();
        b[36] = r.rtm_retries;
        b[37] = r.rtm_abort_cause;
        b[38] = r.object_count;
        for (i, o) in r.objects.iter().enumerate() {
            let at = 40 + 12 * i;
            b[at..at + 4].copy_from_slice(&o.id.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&o.acquired.to_le_bytes());
            b[at + 8..at + 12].copy_from_slice(&o.wait.to_le_bytes());
        }
        b
    }

    #[test]
    fn words_and_bytes_agree_and_round_trip() {
        for (i, r) in varied().iter().enumerate() {
            let words = r.to_words();
            let bytes = r.encode();
            assert_eq!(bytes, bytes_by_field(r), "record {i}: {r:?}");
            for (k, w) in words.iter().enumerate() {
                assert_eq!(
                    bytes[4 * k..4 * k + 4],
                    w.to_le_bytes(),
                    "record {i} word {k}"
                );
            }
            assert_eq!(Record::decode(&bytes, i), Ok(*r));
            assert_eq!(Record::from_words(&words, i), Ok(*r));
        }
    }

    #[test]
    fn corrupt_words_are_reported_like_bytes() {
        let r = varied()[5];
        for at in [11, 32, 34, 35, 38, 39, 47, 100] {
            let mut bytes = r.encode();
            bytes[at] ^= 0xf8;
            let mut words = r.to_words();
            words[at / 4] ^= 0xf8 << (8 * (at % 4));
            let by_bytes = Record::decode(&bytes, 3);
            assert!(by_bytes.is_err(), "byte {at}");
            assert_eq!(Record::from_words(&words, 3), by_bytes, "byte {at}");
        }
    }

    /// Found by the `trace` fuzz target: a record count whose records fit in a `usize` but
    /// not together with the header overflowed the size reported as missing.
    #[test]
    fn a_record_count_too_large_with_the_header_is_refused() {
        let records = (usize::MAX / RECORD_SIZE) as u64;
        let header = Header {
            cores: 1,
            strategy: Strategy::BigLock,
            frequency_hz: 1,
            records,
        };
        assert_eq!(
            Trace::from_bytes(&header.encode()),
            Err(TraceError::BadHeader("record count too large"))
        );
    }

    #[test]
    fn truncated_input_is_reported() {
        let bytes = sample_trace(3).to_bytes();
        assert_eq!(
            Trace::from_bytes(&bytes[..bytes.len() - 1]),
            Err(TraceError::Truncated {
                needed: bytes.len(),
                have: bytes.len() - 1
            })
        );
        assert_eq!(
            Trace::from_bytes(&bytes[..20]),
            Err(TraceError::Truncated {
                needed: HEADER_SIZE,
                have: 20
            })
        );
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            Trace::from_bytes(&longer),
            Err(TraceError::TrailingBytes(1))
        );
    }

    #[test]
    fn corrupt_headers_are_reported() {
        let good = sample_trace(1).to_bytes();
        let with = |at: usize, v: &[u8]| {
            let mut b = good.clone();
            b[at..at + v.len()].copy_from_slice(v);
            Trace::from_bytes(&b)
        };
        assert_eq!(with(0, b"X"), Err(TraceError::BadMagic));
        assert_eq!(Trace::from_bytes(b"hello"), Err(TraceError::BadMagic));
        assert_eq!(with(8, &[1, 0]), Err(TraceError::UnsupportedVersion(1)));
        assert_eq!(with(8, &[3, 0]), Err(TraceError::UnsupportedVersion(3)));
        assert_eq!(with(10, &[64, 0]), Err(TraceError::BadRecordSize(64)));
        assert_eq!(with(12, &[0, 0]), Err(TraceError::BadHeader("zero cores")));
        assert_eq!(
            with(14, &[9, 0]),
            Err(TraceError::BadHeader("unknown strategy"))
        );
        assert_eq!(
            with(16, &[0; 8]),
            Err(TraceError::BadHeader("zero timestamp frequency"))
        );
        // A record count that would overflow the length computation.
        assert!(matches!(
            with(24, &[0xff; 8]),
            Err(TraceError::BadHeader(_)) | Err(TraceError::Truncated { .. })
        ));
    }

    #[test]
    fn corrupt_records_are_reported() {
        let good = sample_trace(2).to_bytes();
        let second = HEADER_SIZE + RECORD_SIZE;
        let with = |at: usize, v: &[u8]| {
            let mut b = good.clone();
            b[second + at..second + at + v.len()].copy_from_slice(v);
            Trace::from_bytes(&b)
        };
        let corrupt = |reason| Err(TraceError::Corrupt { index: 1, reason });
        assert_eq!(with(32, &[7]), corrupt("unknown entry kind"));
        assert_eq!(with(35, &[9]), corrupt("unknown RTM outcome"));
        assert_eq!(with(39, &[1]), corrupt("reserved byte not zero"));
        assert_eq!(with(38, &[7]), corrupt("too many object locks"));
        assert_eq!(with(34, &[0x80]), corrupt("unknown flag bits"));
        // Acquired before requested.
        assert_eq!(with(8, &[200, 0, 0, 0]), corrupt("timestamps out of order"));
        // Core 5 in a 3-core trace.
        assert_eq!(
            with(28, &[5, 0]),
            corrupt("core beyond the header's core count")
        );
        // An object lock taken after the big lock was released.
        assert_eq!(
            with(44, &[200, 0, 0, 0]),
            corrupt("object lock acquired outside the locked section")
        );
        // A third object in a record that says it has two.
        assert_eq!(with(38, &[1]), corrupt("unused object slot not zero"));
        assert_eq!(
            format!("{}", with(32, &[7]).unwrap_err()),
            "record 1 corrupt: unknown entry kind"
        );
    }
}
