//! The per-connection output buffer and the reply writer the commands use.
//!
//! # The output-space contract
//!
//! Replies go into an [`OutBuf`], a caller-provided byte buffer holding the bytes not yet sent.
//! The caller drains it ([`OutBuf::pending`], then [`OutBuf::consume`] with what the socket
//! took). A command is executed only if its whole reply fits in the free space:
//!
//! * commands whose reply is known before they change anything (every read, and writes such as
//!   `SET`, `HSET`, `INCR`) write their reply first, and change the store only once it fitted;
//! * commands whose reply depends on what they change (`DEL`, `HDEL`, `SREM`, `LREM`, `ZADD`)
//!   reserve the reply's bound (a few bytes) before changing anything.
//!
//! If the reply does not fit, what was written is rolled back, nothing in the store changed,
//! and [`crate::Store::execute`] returns [`crate::NeedOutput`]: the caller drains the buffer and
//! offers the same command again. A reply that cannot fit even into the *empty* buffer (a value
//! larger than the whole output buffer) would never fit: the command then fails with
//! `-ERR reply exceeds the connection's output buffer` (and changes nothing), so a connection can
//! never deadlock on its own output buffer.

use core::fmt;

/// Bytes an output buffer needs at least, so that every error reply this crate writes (the
/// longest is the unknown-command error, whose echoed name and arguments are truncated) fits into
/// an empty buffer.
pub const MIN_OUTPUT: usize = 384;

/// A connection's output buffer: caller-provided storage holding the reply bytes not yet sent.
pub struct OutBuf<'b> {
    buf: &'b mut [u8],
    head: usize,
    tail: usize,
    /// The size of the larger buffer the caller can lend (see [`OutBuf::set_lendable`]).
    lendable: usize,
    /// A reply did not fit into this empty buffer and would get a chance in a larger one.
    wants_larger: bool,
}

impl<'b> OutBuf<'b> {
    /// An empty output buffer over `buf`. It should hold at least [`MIN_OUTPUT`] bytes: with less,
    /// a long error reply may never fit and [`crate::Store::execute`] keeps asking for space.
    pub fn new(buf: &'b mut [u8]) -> Self {
        OutBuf {
            buf,
            head: 0,
            tail: 0,
            lendable: 0,
            wants_larger: false,
        }
    }

    /// Tells the buffer that its owner can lend it a buffer of `n` bytes: a reply that does not
    /// fit into the empty buffer is then not refused at once, the owner is asked for the larger
    /// one instead ([`OutBuf::wants_larger`]), and the reply is refused only if it does not fit
    /// there either.
    pub fn set_lendable(&mut self, n: usize) {
        self.lendable = n;
    }

    /// Whether the last command's reply did not fit into the empty buffer but may fit into the
    /// lendable one: swap that in ([`OutBuf::swap`]) and execute the command again.
    pub fn wants_larger(&self) -> bool {
        self.wants_larger
    }

    /// Drops every pending byte (the connection is ending).
    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.tail = 0;
        self.wants_larger = false;
    }

    /// Replaces the storage with `buf`, moving the pending bytes over, and returns the old
    /// storage; `Err(buf)` (nothing changed) when `buf` cannot hold the pending bytes.
    pub fn swap(&mut self, buf: &'b mut [u8]) -> Result<&'b mut [u8], &'b mut [u8]> {
        let n = self.tail - self.head;
        if buf.len() < n {
            return Err(buf);
        }
        buf[..n].copy_from_slice(&self.buf[self.head..self.tail]);
        self.head = 0;
        self.tail = n;
        self.wants_larger = false;
        Ok(core::mem::replace(&mut self.buf, buf))
    }

    /// Whether a reply that overflows the empty buffer gets a larger one (and marks that it
    /// wants it), rather than being refused.
    pub(crate) fn ask_larger(&mut self) -> bool {
        if self.buf.len() < self.lendable {
            self.wants_larger = true;
        }
        self.wants_larger
    }

    /// The reply bytes written and not yet consumed, oldest first.
    pub fn pending(&self) -> &[u8] {
        self.buf.get(self.head..self.tail).unwrap_or(&[])
    }

    /// Drops the first `n` pending bytes (those the caller sent); `n` is clamped to the pending
    /// length.
    pub fn consume(&mut self, n: usize) {
        self.head += n.min(self.tail - self.head);
        if self.head == self.tail {
            self.head = 0;
            self.tail = 0;
        }
    }

    /// Whether no reply bytes are pending.
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    /// The buffer's size in bytes.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes that can still be written (after moving the pending bytes to the front if needed).
    pub fn free(&self) -> usize {
        self.buf.len() - (self.tail - self.head)
    }

    /// Makes `n` contiguous bytes writable at `tail`; false when the buffer cannot hold them.
    fn make_room(&mut self, n: usize) -> bool {
        if self.buf.len() - self.tail >= n {
            return true;
        }
        if self.free() < n {
            return false;
        }
        self.buf.copy_within(self.head..self.tail, 0);
        self.tail -= self.head;
        self.head = 0;
        true
    }
}

/// The most bytes an integer reply takes (`:-9223372036854775808\r\n`): what a command that
/// counts while it applies reserves before it changes anything.
pub(crate) const INT_REPLY_MAX: usize = 23;

/// The reply did not fit into the output buffer (what was written has to be rolled back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow;

/// Writes one command's reply into an [`OutBuf`], remembering how much it wrote so that the
/// whole reply can be rolled back when a later part of it does not fit.
pub(crate) struct Reply<'o, 'b> {
    out: &'o mut OutBuf<'b>,
    written: usize,
}

impl<'o, 'b> Reply<'o, 'b> {
    pub(crate) fn new(out: &'o mut OutBuf<'b>) -> Self {
        out.wants_larger = false;
        Reply { out, written: 0 }
    }

    /// Removes everything this reply wrote.
    pub(crate) fn rollback(&mut self) {
        self.out.tail -= self.written;
        self.written = 0;
        if self.out.head == self.out.tail {
            self.out.head = 0;
            self.out.tail = 0;
        }
    }

    /// Whether nothing was pending in the buffer before this reply.
    pub(crate) fn started_empty(&self) -> bool {
        self.out.tail - self.out.head == self.written
    }

    /// See [`OutBuf::ask_larger`].
    pub(crate) fn ask_larger(&mut self) -> bool {
        self.out.ask_larger()
    }

    /// The output buffer's size: the most one reply can take.
    pub(crate) fn capacity(&self) -> usize {
        self.out.capacity()
    }

    /// Guarantees that `n` more bytes can be written, without writing them.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), Overflow> {
        if self.out.free() >= n {
            Ok(())
        } else {
            Err(Overflow)
        }
    }

    /// Appends raw bytes.
    pub(crate) fn raw(&mut self, bytes: &[u8]) -> Result<(), Overflow> {
        if !self.out.make_room(bytes.len()) {
            return Err(Overflow);
        }
        let t = self.out.tail;
        self.out.buf[t..t + bytes.len()].copy_from_slice(bytes);
        self.out.tail += bytes.len();
        self.written += bytes.len();
        Ok(())
    }

    fn line(&mut self, prefix: u8, n: i64) -> Result<(), Overflow> {
        let mut digits = [0u8; 24];
        let text = fmt_i64(n, &mut digits);
        self.raw(&[prefix])?;
        self.raw(text)?;
        self.raw(b"\r\n")
    }

    /// `+OK`.
    pub(crate) fn ok(&mut self) -> Result<(), Overflow> {
        self.raw(b"+OK\r\n")
    }

    /// A simple string `+s`.
    pub(crate) fn simple(&mut self, s: &[u8]) -> Result<(), Overflow> {
        self.raw(b"+")?;
        self.raw(s)?;
        self.raw(b"\r\n")
    }

    /// An error `-msg` (the message must hold no CR or LF).
    pub(crate) fn error(&mut self, msg: &str) -> Result<(), Overflow> {
        self.raw(b"-")?;
        self.raw(msg.as_bytes())?;
        self.raw(b"\r\n")
    }

    /// An integer `:n`.
    pub(crate) fn int(&mut self, n: i64) -> Result<(), Overflow> {
        self.line(b':', n)
    }

    /// An array header `*n`.
    pub(crate) fn array(&mut self, n: usize) -> Result<(), Overflow> {
        self.line(b'*', n as i64)
    }

    /// A bulk string `$len` + bytes.
    pub(crate) fn bulk(&mut self, bytes: &[u8]) -> Result<(), Overflow> {
        if !self.out.make_room(bytes.len().saturating_add(24)) {
            return Err(Overflow);
        }
        self.line(b'$', bytes.len() as i64)?;
        self.raw(bytes)?;
        self.raw(b"\r\n")
    }

    /// The nil bulk string `$-1`.
    pub(crate) fn nil(&mut self) -> Result<(), Overflow> {
        self.raw(b"$-1\r\n")
    }

    /// An optional bulk string: the bytes, or nil.
    pub(crate) fn opt_bulk(&mut self, bytes: Option<&[u8]>) -> Result<(), Overflow> {
        match bytes {
            Some(b) => self.bulk(b),
            None => self.nil(),
        }
    }
}

/// Formats `n` in decimal into `buf`, returning the digits.
pub(crate) fn fmt_i64(n: i64, buf: &mut [u8; 24]) -> &[u8] {
    let mut v = n.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// A `fmt::Write` that only counts bytes (to size a bulk string before writing it).
pub(crate) struct Counter(pub(crate) usize);

impl fmt::Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

impl fmt::Write for Reply<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.raw(s.as_bytes()).map_err(|_| fmt::Error)
    }
}
