//! The streaming RESP2 request parser.
//!
//! A [`Parser`] owns a caller-provided input buffer. Bytes are appended as they arrive, in any
//! fragments ([`Parser::receive`]); [`Parser::next_command`] returns the oldest *complete*
//! request as a [`Command`] that borrows the buffer (no copy, no allocation), and
//! [`Parser::consume`] drops it once it was answered. An incomplete request stays buffered.
//!
//! Two request forms are accepted, as by Redis:
//!
//! * arrays of bulk strings, `*<n>\r\n` then `n` times `$<len>\r\n<len bytes>\r\n` (what
//!   redis-cli, redis-benchmark and client libraries send);
//! * inline commands, a line ending in `\n` (optionally `\r\n`), as typed over telnet, split
//!   into words as Redis's `sdssplitargs` splits them: words are separated by white space; a
//!   word may hold one quoted part, which ends it: in double quotes `\n`, `\r`, `\t`, `\b`,
//!   `\a`, `\xHH` and `\<any byte>` are unescaped, in single quotes only `\'`. A closing quote
//!   must be followed by white space or the end of the line, and a quote must be closed, or
//!   the request is malformed ([`ProtocolError::UnbalancedQuotes`]). A NUL byte ends the line's
//!   words, as it ends the C string Redis splits.
//!
//! An unquoted word is returned as it lies in the buffer. A quoted word is unescaped in place
//! (unescaping only shortens it), and its bytes are moved three bytes right, behind a NUL
//! marker and their length (16 bits, little-endian): the two quotes and the white space or line
//! end that follows the closing quote make the room. No unquoted word holds a NUL, so the
//! argument iterator tells the two apart by the first byte. An inline line is rewritten once;
//! the parser remembers it until the request is consumed.
//!
//! Every length is checked against the buffer's size as soon as its header is complete, so a
//! request that could never fit is reported at once, and a request that fills the whole buffer
//! without being complete is an error too: the buffer is the bound on a request's size. Errors
//! are [`ProtocolError`]s; after one the connection has to be closed, as Redis does (the stream
//! cannot be resynchronised).
//!
//! An incomplete request is not read again from its first byte when more bytes arrive: the
//! parser remembers how far it got (the array's element count and the end of its last
//! complete element, or how much of an inline line holds no line end) and goes on from
//! there. A request of many small arguments arriving in many fragments (an `MSET` of 20,000
//! arguments, say) is read once, not once per fragment; bulk payloads are skipped by their
//! length.

use core::fmt;

/// A header line (`*<n>` or `$<len>`) longer than this without its CRLF is malformed: the
/// longest valid one, `$-9223372036854775808`, has 21 bytes.
const MAX_HEADER: usize = 32;

/// Why a request stream is malformed; the connection has to be closed after replying
/// `-ERR Protocol error: <Display>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// `*<n>` is not an integer, or announces more arguments than Redis's bound (`i32::MAX`)
    /// or the buffer can hold. (A count of zero or below is an empty request, skipped.)
    InvalidMultibulkLength,
    /// `$<len>` is not an integer, is negative, or is larger than the buffer.
    InvalidBulkLength,
    /// An array element does not start with `$` (the byte found, `?` when not printable).
    ExpectedDollar(u8),
    /// A bulk string's payload is not followed by CRLF.
    MissingCrlf,
    /// An array request does not fit into the connection's input buffer.
    RequestTooLarge,
    /// An inline request line does not fit into the connection's input buffer.
    InlineTooLarge,
    /// An inline request has a quote that is not closed, or a closing quote that is not
    /// followed by white space.
    UnbalancedQuotes,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            ProtocolError::InvalidBulkLength => f.write_str("invalid bulk length"),
            ProtocolError::ExpectedDollar(c) => write!(f, "expected '$', got '{}'", *c as char),
            ProtocolError::MissingCrlf => f.write_str("expected CRLF after bulk data"),
            ProtocolError::RequestTooLarge => {
                f.write_str("request larger than the connection's input buffer")
            }
            ProtocolError::InlineTooLarge => f.write_str("too big inline request"),
            ProtocolError::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
        }
    }
}

/// One complete request: its argument list (the command name first), borrowed from the
/// parser's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Command<'p> {
    frame: &'p [u8],
    argc: usize,
    inline: bool,
}

impl<'p> Command<'p> {
    /// The number of arguments, the command name included (at least 1).
    pub fn argc(&self) -> usize {
        self.argc
    }

    /// The request's size in the input buffer, in bytes: what [`Parser::consume`] takes.
    pub fn frame_len(&self) -> usize {
        self.frame.len()
    }

    /// The arguments, the command name first.
    pub fn args(&self) -> Args<'p> {
        let pos = if self.inline {
            0
        } else {
            // Skip the `*<n>\r\n` header.
            find_crlf(self.frame, 0).map_or(self.frame.len(), |i| i + 2)
        };
        Args {
            frame: self.frame,
            pos,
            left: self.argc,
            inline: self.inline,
        }
    }

    /// The `i`th argument (0 is the command name), if there is one.
    pub fn arg(&self, i: usize) -> Option<&'p [u8]> {
        self.args().nth(i)
    }
}

/// Iterator over a [`Command`]'s arguments.
#[derive(Debug, Clone)]
pub struct Args<'p> {
    frame: &'p [u8],
    pos: usize,
    left: usize,
    inline: bool,
}

impl<'p> Iterator for Args<'p> {
    type Item = &'p [u8];

    fn next(&mut self) -> Option<&'p [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let rest = self.frame.get(self.pos..)?;
        if self.inline {
            let start = rest.iter().position(|&b| !is_space(b))?;
            let word = &rest[start..];
            if word[0] == 0 {
                // A quoted word, rewritten by `split_inline`: NUL, length, bytes.
                let len = usize::from(u16::from_le_bytes([*word.get(1)?, *word.get(2)?]));
                self.pos += start + 3 + len;
                return word.get(3..3 + len);
            }
            let len = word
                .iter()
                .position(|&b| ends_word(b))
                .unwrap_or(word.len());
            self.pos += start + len;
            return word.get(..len);
        }
        // `$<len>\r\n<payload>\r\n`, validated by `scan`.
        let eol = find_crlf(rest, 1)?;
        let len = parse_int(rest.get(1..eol)?)? as usize;
        let payload = rest.get(eol + 2..eol + 2 + len)?;
        self.pos += eol + 2 + len + 2;
        Some(payload)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// A streaming request parser over a caller-provided input buffer.
pub struct Parser<'a> {
    buf: &'a mut [u8],
    start: usize,
    end: usize,
    /// The inline request at `start`, already split by `split_inline`: its length and number
    /// of words.
    inline_ready: Option<(usize, usize)>,
    /// The largest request accepted: the buffer's size, or a larger buffer's the caller can
    /// lend ([`Parser::set_lendable`]).
    limit: usize,
    /// The buffer is full with an incomplete request that needs at least this many bytes.
    wants: Option<usize>,
    /// How far `scan` read into the incomplete request at `start` (positions from `start`,
    /// so moving the buffered bytes keeps it right); reset when the request is consumed.
    progress: Progress,
}

/// What `scan` already knows of the incomplete request at the start of the unconsumed bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Progress {
    /// An array's element count, once its header was read.
    count: Option<usize>,
    /// Elements read completely (for an array).
    elements: usize,
    /// For an array: where the first element not yet read starts (after the header, once it
    /// was read). For an inline request: how many bytes hold no line end.
    pos: usize,
}

/// What `scan` found at the start of the unconsumed bytes.
enum Scan {
    /// More bytes are needed; the request has at least this many.
    Incomplete(usize),
    Frame {
        len: usize,
        argc: usize,
        inline: bool,
    },
}

impl<'a> Parser<'a> {
    /// A parser buffering requests in `buf`, whose size bounds a request's size.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Parser {
            buf,
            start: 0,
            end: 0,
            inline_ready: None,
            limit: 0,
            wants: None,
            progress: Progress::default(),
        }
    }

    /// Tells the parser that its owner can lend it a buffer of `n` bytes: requests up to that
    /// size are accepted (their lengths are checked against it), and a request that fills the
    /// buffer without being complete makes [`Parser::wants`] ask for the larger one instead of
    /// being an error.
    pub fn set_lendable(&mut self, n: usize) {
        self.limit = n;
        // The lengths read so far were checked against the old bound.
        self.progress = Progress::default();
    }

    /// When [`Parser::next_command`] needs more bytes than the buffer holds: how many the
    /// request needs at least (at most the lendable size). Swap in a buffer that large
    /// ([`Parser::swap`]) and go on receiving.
    pub fn wants(&self) -> Option<usize> {
        self.wants
    }

    /// Drops every buffered byte (the connection is ending).
    pub(crate) fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.wants = None;
        self.inline_ready = None;
        self.progress = Progress::default();
    }

    /// Replaces the buffer with `buf`, moving the unconsumed bytes over, and returns the old
    /// one; `Err(buf)` (nothing changed) when `buf` cannot hold the unconsumed bytes.
    pub fn swap(&mut self, buf: &'a mut [u8]) -> Result<&'a mut [u8], &'a mut [u8]> {
        let n = self.end - self.start;
        if buf.len() < n {
            return Err(buf);
        }
        buf[..n].copy_from_slice(&self.buf[self.start..self.end]);
        self.start = 0;
        self.end = n;
        self.wants = None;
        Ok(core::mem::replace(&mut self.buf, buf))
    }

    /// The buffer's size in bytes.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Appends as many of `data`'s bytes as fit, returning how many were taken; the caller keeps
    /// the rest and offers it again once commands were consumed.
    pub fn receive(&mut self, data: &[u8]) -> usize {
        if self.start > 0 && self.buf.len() - self.end < data.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = data.len().min(self.buf.len() - self.end);
        self.buf[self.end..self.end + n].copy_from_slice(&data[..n]);
        self.end += n;
        n
    }

    /// Bytes buffered and not yet consumed.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The oldest complete request, `Ok(None)` if more bytes are needed, or the protocol error
    /// that makes the stream unreadable (the same error again on every later call). Empty
    /// requests (`*0`, any negative count, blank inline lines) are skipped: Redis 7.0 does not
    /// answer them.
    pub fn next_command(&mut self) -> Result<Option<Command<'_>>, ProtocolError> {
        self.wants = None;
        let (len, argc, inline) = loop {
            if let Some((len, argc)) = self.inline_ready {
                if argc > 0 {
                    break (len, argc, true);
                }
                self.consume(len);
                continue;
            }
            let cap = self.buf.len();
            let limit = self.limit.max(cap);
            let pending = &self.buf[self.start..self.end];
            match scan(pending, limit, &mut self.progress)? {
                Scan::Incomplete(need) => {
                    if pending.len() >= cap && cap < limit && need > 0 {
                        self.wants = Some(need.max(cap + 1).min(limit));
                        return Ok(None);
                    }
                    if pending.len() >= cap {
                        return Err(if pending.first() == Some(&b'*') {
                            ProtocolError::RequestTooLarge
                        } else {
                            ProtocolError::InlineTooLarge
                        });
                    }
                    return Ok(None);
                }
                Scan::Frame {
                    len, inline: true, ..
                } => {
                    let line = &mut self.buf[self.start..self.start + len];
                    self.inline_ready = Some((len, split_inline(line)?));
                }
                Scan::Frame { len, argc: 0, .. } => self.consume(len),
                Scan::Frame { len, argc, inline } => break (len, argc, inline),
            }
        };
        Ok(Some(Command {
            frame: &self.buf[self.start..self.start + len],
            argc,
            inline,
        }))
    }

    /// Drops the first `n` buffered bytes: a command's [`Command::frame_len`] once it was
    /// answered. `n` is clamped to what is buffered.
    pub fn consume(&mut self, n: usize) {
        self.inline_ready = None;
        self.progress = Progress::default();
        self.start += n.min(self.end - self.start);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }
}

/// White space between words: C's `isspace`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c)
}

/// The bytes that end an unquoted word in `sdssplitargs` (vertical tab and form feed do not).
fn ends_word(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0)
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline request line (its `\n` included) into words in place, as the module docs
/// describe, and returns how many there are.
fn split_inline(line: &mut [u8]) -> Result<usize, ProtocolError> {
    // The words end where the line does: before its `\n`, or a `\r\n`.
    let mut end = line.len().saturating_sub(1);
    if end > 0 && line[end - 1] == b'\r' {
        end -= 1;
    }
    // A NUL ends the C string that Redis splits.
    if let Some(nul) = line[..end].iter().position(|&b| b == 0) {
        end = nul;
    }
    let mut argc = 0;
    let mut r = 0;
    loop {
        while r < end && is_space(line[r]) {
            r += 1;
        }
        if r >= end {
            return Ok(argc);
        }
        argc += 1;
        let start = r;
        while r < end && !ends_word(line[r]) && line[r] != b'"' && line[r] != b'\'' {
            r += 1;
        }
        if r >= end || ends_word(line[r]) {
            continue; // an unquoted word, left as it is
        }
        // The word's quoted part: unescape it right behind the unquoted part.
        let quote = line[r];
        let mut w = r;
        r += 1;
        loop {
            if r >= end {
                return Err(ProtocolError::UnbalancedQuotes);
            }
            let b = line[r];
            if b == quote {
                if r + 1 < end && !is_space(line[r + 1]) {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                r += 1;
                break;
            }
            let (byte, used) = match (quote, b, line.get(r + 1).filter(|_| r + 1 < end)) {
                (b'"', b'\\', Some(&b'x')) => {
                    match (
                        line.get(r + 2)
                            .filter(|_| r + 2 < end)
                            .and_then(|&h| hex_digit(h)),
                        line.get(r + 3)
                            .filter(|_| r + 3 < end)
                            .and_then(|&l| hex_digit(l)),
                    ) {
                        (Some(h), Some(l)) => (h << 4 | l, 4),
                        _ => (b'x', 2),
                    }
                }
                (b'"', b'\\', Some(&c)) => {
                    let byte = match c {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        c => c,
                    };
                    (byte, 2)
                }
                (b'\'', b'\\', Some(&b'\'')) => (b'\'', 2),
                _ => (b, 1),
            };
            line[w] = byte;
            w += 1;
            r += used;
        }
        // `r` is past the closing quote, at white space or the line's end, which `line` holds
        // (its `\n` at least): the word's room runs to `r + 1`.
        let len = w - start;
        let Ok(len16) = u16::try_from(len) else {
            return Err(ProtocolError::InlineTooLarge);
        };
        line.copy_within(start..w, start + 3);
        line[start] = 0;
        line[start + 1..start + 3].copy_from_slice(&len16.to_le_bytes());
        for b in &mut line[start + 3 + len..=r] {
            *b = b' ';
        }
        r += 1;
    }
}

/// Index of the first `\r\n` in `buf` at or after `from`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    rest.windows(2).position(|w| w == b"\r\n").map(|i| i + from)
}

/// A strict decimal integer (optional `-`, digits only), as Redis's `string2ll`.
pub(crate) fn parse_int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    if neg && digits == b"0" {
        return None;
    }
    // Accumulate negatively so that i64::MIN parses.
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// Reads a header line `<prefix><int>\r\n` starting at `pos`: `Ok(None)` if incomplete.
fn header(
    buf: &[u8],
    pos: usize,
    err: ProtocolError,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let window_end = buf.len().min(pos + MAX_HEADER);
    match find_crlf(&buf[..window_end], pos + 1) {
        Some(eol) => match parse_int(&buf[pos + 1..eol]) {
            Some(n) => Ok(Some((n, eol + 2))),
            None => Err(err),
        },
        None if buf.len() >= pos + MAX_HEADER => Err(err),
        // A lone `\r` followed by something else than `\n` is malformed too.
        None if buf[pos + 1..window_end]
            .windows(2)
            .any(|w| w[0] == b'\r' && w[1] != b'\n') =>
        {
            Err(err)
        }
        None => Ok(None),
    }
}

/// Finds the first request in `buf` (the unconsumed bytes of a buffer of `cap` bytes),
/// going on from what an earlier call for the same request found (`progress`, which it
/// updates; a complete request leaves it as it was, to be reset by its consumer).
fn scan(buf: &[u8], cap: usize, progress: &mut Progress) -> Result<Scan, ProtocolError> {
    let Some(&first) = buf.first() else {
        return Ok(Scan::Incomplete(1));
    };
    if first != b'*' {
        let from = progress.pos.min(buf.len());
        let Some(nl) = buf[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| from + i)
        else {
            progress.pos = buf.len();
            // An inline request never gets more than the connection's own buffer.
            return Ok(Scan::Incomplete(0));
        };
        let argc = count_words(&buf[..nl]);
        return Ok(Scan::Frame {
            len: nl + 1,
            argc,
            inline: true,
        });
    }
    let count = match progress.count {
        Some(count) => count,
        None => {
            let Some((count, pos)) = header(buf, 0, ProtocolError::InvalidMultibulkLength)? else {
                return Ok(Scan::Incomplete(buf.len() + 1));
            };
            if count > i64::from(i32::MAX) || count > (cap / 6) as i64 {
                // Redis's bound, and the buffer's: each element takes at least `$0\r\n\r\n`.
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            let count = count.max(0) as usize;
            *progress = Progress {
                count: Some(count),
                elements: 0,
                pos,
            };
            count
        }
    };
    let mut pos = progress.pos;
    for _ in progress.elements..count {
        let Some(&tag) = buf.get(pos) else {
            return Ok(Scan::Incomplete(pos + 1));
        };
        if tag != b'$' {
            let shown = if tag.is_ascii_graphic() || tag == b' ' {
                tag
            } else {
                b'?'
            };
            return Err(ProtocolError::ExpectedDollar(shown));
        }
        let Some((len, next)) = header(buf, pos, ProtocolError::InvalidBulkLength)? else {
            return Ok(Scan::Incomplete(buf.len() + 1));
        };
        if len < 0 || len as u64 > cap as u64 {
            return Err(ProtocolError::InvalidBulkLength);
        }
        let data_end = next + len as usize;
        if buf.len() < data_end + 2 {
            // The bytes of the CRLF that arrived must already be right.
            if buf.len() > data_end && buf[data_end] != b'\r' {
                return Err(ProtocolError::MissingCrlf);
            }
            return Ok(Scan::Incomplete(data_end + 2));
        }
        if &buf[data_end..data_end + 2] != b"\r\n" {
            return Err(ProtocolError::MissingCrlf);
        }
        pos = data_end + 2;
        progress.elements += 1;
        progress.pos = pos;
    }
    Ok(Scan::Frame {
        len: pos,
        argc: count,
        inline: false,
    })
}

fn count_words(line: &[u8]) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for &b in line {
        let space = is_space(b);
        if !space && !in_word {
            n += 1;
        }
        in_word = !space;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn parse_all(input: &[u8], cap: usize) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut buf = std::vec![0u8; cap];
        let mut p = Parser::new(&mut buf);
        p.receive(input);
        let mut cmds = Vec::new();
        while let Some(c) = p.next_command()? {
            assert_eq!(c.args().count(), c.argc());
            cmds.push(c.args().map(|a| a.to_vec()).collect());
            let n = c.frame_len();
            p.consume(n);
        }
        Ok(cmds)
    }

    #[test]
    fn parses_multibulk_and_inline() {
        let cmds = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n  set a  b\n", 128).unwrap();
        assert_eq!(cmds.len(), 3);
        assert_eq!(cmds[0], [b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(cmds[1], [b"PING".to_vec()]);
        assert_eq!(cmds[2], [b"set".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn binary_safe_payloads() {
        let cmds = parse_all(b"*2\r\n$3\r\nGET\r\n$4\r\n\r\n\0*\r\n", 64).unwrap();
        assert_eq!(cmds[0][1], b"\r\n\0*");
    }

    #[test]
    fn empty_requests_are_skipped() {
        let cmds = parse_all(
            b"*0\r\n*-1\r\n*-10\r\n\r\n   \n\"\"\n*1\r\n$4\r\nPING\r\n",
            64,
        )
        .unwrap();
        assert_eq!(cmds[0], [b"".to_vec()]);
        let cmds = &cmds[1..];
        assert_eq!(cmds, [[b"PING".to_vec()]]);
    }

    #[test]
    fn incomplete_is_not_an_error() {
        let full = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        for cut in 0..full.len() {
            assert_eq!(parse_all(&full[..cut], 64).unwrap().len(), 0, "cut {cut}");
        }
    }

    #[test]
    fn malformed_headers() {
        use ProtocolError::*;
        let cases: &[(&[u8], ProtocolError)] = &[
            (b"*x\r\n", InvalidMultibulkLength),
            (b"*\r\n", InvalidMultibulkLength),
            (b"*+1\r\n", InvalidMultibulkLength),
            (b"*01\r\n", InvalidMultibulkLength),
            (b"*99999999999999999999\r\n", InvalidMultibulkLength),
            (b"*1\r\n$-1\r\n", InvalidBulkLength),
            (b"*1\r\n$-5\r\n", InvalidBulkLength),
            (b"*1\r\n$1000\r\n", InvalidBulkLength),
            (b"*1\r\n$x\r\n", InvalidBulkLength),
            (b"*1\r\n:1\r\n", ExpectedDollar(b':')),
            (b"*1\r\n$4\r\nPINGxx", MissingCrlf),
            (b"*1\r\n$4\r\nPINGx", MissingCrlf),
            (b"*1\rx", InvalidMultibulkLength),
            (
                b"*1111111111111111111111111111111111111",
                InvalidMultibulkLength,
            ),
            (b"*1000\r\n", InvalidMultibulkLength),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_all(input, 64),
                Err(*want),
                "{:?}",
                std::str::from_utf8(input)
            );
        }
    }

    #[test]
    fn too_large_requests() {
        assert_eq!(
            parse_all(b"*2\r\n$3\r\nSET\r\n$20\r\n01234567890123456789\r\n", 32),
            Err(ProtocolError::RequestTooLarge)
        );
        assert_eq!(
            parse_all(&[b'a'; 32], 32),
            Err(ProtocolError::InlineTooLarge)
        );
    }

    #[test]
    fn receive_compacts_and_bounds() {
        let mut buf = [0u8; 16];
        let mut p = Parser::new(&mut buf);
        assert_eq!(p.receive(b"PING\r\nPING\r\nPING\r\n"), 16);
        let n = p.next_command().unwrap().unwrap().frame_len();
        p.consume(n);
        assert_eq!(p.receive(b"\r\nECHO"), 6);
        assert_eq!(p.buffered(), 16);
    }

    /// An `MSET` of `pairs` key/value pairs with keys and values of one to three bytes.
    fn many_args(pairs: usize) -> Vec<u8> {
        let mut req = std::format!("*{}\r\n$4\r\nMSET\r\n", 2 * pairs + 1).into_bytes();
        for i in 0..2 * pairs {
            let arg = std::format!("{}", i % 1000);
            req.extend_from_slice(std::format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
        req
    }

    #[test]
    fn fragments_resume_where_the_last_scan_stopped() {
        let req = many_args(500);
        // A command before it, consumed once answered, so that the request starts past the
        // buffer's first byte and is moved to the front by a later `receive`.
        let mut input = b"PING\r\n".to_vec();
        input.extend_from_slice(&req);
        input.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        for step in [1usize, 2, 3, 7, 64, 1000] {
            let mut buf = std::vec![0u8; input.len() + 8];
            let mut p = Parser::new(&mut buf);
            let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
            let mut fed = 0;
            let mut last_elements = 0;
            while fed < input.len() {
                let end = (fed + step).min(input.len());
                fed += p.receive(&input[fed..end]);
                while let Some(c) = p.next_command().unwrap() {
                    cmds.push(c.args().map(|a| a.to_vec()).collect());
                    let n = c.frame_len();
                    p.consume(n);
                    last_elements = 0;
                }
                // What was read is remembered, and only grows while the request is incomplete.
                assert!(p.progress.elements >= last_elements, "step {step}");
                last_elements = p.progress.elements;
            }
            assert_eq!(cmds.len(), 3, "step {step}");
            assert_eq!(cmds[1].len(), 1001, "step {step}");
            assert_eq!(cmds[1][0], b"MSET");
            assert_eq!(cmds[1][1000], b"999");
            assert_eq!(cmds[2], [b"PING".to_vec()]);
        }
    }

    #[test]
    fn a_partly_read_request_is_not_read_again() {
        let req = many_args(500);
        let mut buf = std::vec![0u8; req.len()];
        let mut p = Parser::new(&mut buf);
        p.receive(&req[..req.len() / 2]);
        assert!(p.next_command().unwrap().is_none());
        let read = p.progress;
        assert!(read.elements > 400 && read.count == Some(1001), "{read:?}");
        // Corrupting bytes already read is not noticed: they are not looked at again.
        let first = 17;
        assert_eq!(&p.buf[first..first + 2], b"$1");
        p.buf[first] = b'!';
        p.receive(&req[req.len() / 2..]);
        let c = p.next_command().unwrap().unwrap();
        assert_eq!(c.argc(), 1001);
    }

    #[test]
    fn progress_survives_a_larger_buffer() {
        let req = many_args(300);
        let mut small = std::vec![0u8; 1024];
        let mut large = std::vec![0u8; 8192];
        let mut p = Parser::new(&mut small);
        p.set_lendable(large.len());
        let taken = p.receive(&req);
        assert_eq!(taken, 1024);
        assert!(p.next_command().unwrap().is_none());
        assert!(p.wants().is_some());
        let before = p.progress;
        assert!(p.swap(&mut large).is_ok());
        assert_eq!(p.progress, before);
        p.receive(&req[taken..]);
        let c = p.next_command().unwrap().unwrap();
        assert_eq!(c.argc(), 601);
        assert_eq!(c.frame_len(), req.len());
    }

    #[test]
    fn a_malformed_element_after_fragments_is_the_same_error_every_time() {
        let mut buf = [0u8; 256];
        let mut p = Parser::new(&mut buf);
        p.receive(b"*3\r\n$3\r\nSET\r\n$1\r\nk");
        assert!(p.next_command().unwrap().is_none());
        p.receive(b"\r\n:1\r\n");
        assert_eq!(
            p.next_command().err(),
            Some(ProtocolError::ExpectedDollar(b':'))
        );
        assert_eq!(
            p.next_command().err(),
            Some(ProtocolError::ExpectedDollar(b':'))
        );
    }

    #[test]
    fn an_inline_line_in_fragments_is_searched_once() {
        let mut buf = [0u8; 64];
        let mut p = Parser::new(&mut buf);
        for b in b"SET key value" {
            p.receive(&[*b]);
            assert!(p.next_command().unwrap().is_none());
        }
        assert_eq!(p.progress.pos, 13);
        p.receive(b"\r\n");
        let c = p.next_command().unwrap().unwrap();
        assert_eq!(
            c.args().collect::<Vec<_>>(),
            [&b"SET"[..], b"key", b"value"]
        );
    }

    #[test]
    fn int_parsing_is_strict() {
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"-12"), Some(-12));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1a",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }
}
