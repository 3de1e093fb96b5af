//! One client connection: a [`Parser`], an [`OutBuf`] and a [`Session`] over caller storage.

use core::fmt::Write as _;

use crate::commands::{Outcome, Session};
use crate::output::{OutBuf, Reply, MIN_OUTPUT};
use crate::parser::Parser;
use crate::store::Store;

/// Bytes an input buffer needs at least (a request must fit into it, headers included).
pub const MIN_INPUT: usize = 16;

/// What [`Connection::process`] left to the caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Every complete request was answered: send the output, feed more input.
    NeedInput,
    /// The next reply does not fit: send (some of) the output, then call `process` again.
    NeedOutput,
    /// Send the remaining output, then close the connection (`QUIT`, or a protocol error whose
    /// `-ERR Protocol error: ...` reply is the last output). Further input is ignored.
    Close,
}

/// A client connection: request parser, reply buffer and selected database.
///
/// The caller's loop, with a TCP socket: copy received bytes in with [`Connection::receive`]
/// (keeping what was not taken), call [`Connection::process`], send [`Connection::output`] and
/// [`Connection::consume_output`] what the socket took; close the socket after the output was
/// sent once `process` said [`Progress::Close`].
///
/// # Larger buffers for large requests and replies
///
/// A caller that has a larger buffer to lend (one per core, say) announces its size with
/// [`Connection::set_lendable`]. A request larger than the connection's own input buffer (up
/// to that size) then makes [`Connection::wants_input`] say how many bytes it needs, and a reply
/// larger than the empty output buffer makes [`Connection::wants_output`] true, instead of
/// failing. The caller lends a buffer ([`Connection::lend_input`], [`Connection::lend_output`])
/// or, while it is lent elsewhere, simply waits (feeding no more input and calling `process`
/// again later: nothing is lost, the request stays buffered, the command has not run). Once
/// the large request was answered or the large reply sent, [`Connection::take_lent`] gives the
/// lent buffers back and the connection returns to its own.
pub struct Connection<'a> {
    parser: Parser<'a>,
    out: OutBuf<'a>,
    session: Session,
    closing: bool,
    /// The connection's own input buffer while a larger one is lent to it.
    own_input: Option<&'a mut [u8]>,
    /// The connection's own output buffer while a larger one is lent to it.
    own_output: Option<&'a mut [u8]>,
}

impl<'a> Connection<'a> {
    /// A connection buffering requests in `input` (its size bounds a request, unless a larger
    /// buffer is lent) and replies in
    /// `output`; `None` when `input` is smaller than [`MIN_INPUT`] or `output` smaller than
    /// [`MIN_OUTPUT`] bytes.
    pub fn new(input: &'a mut [u8], output: &'a mut [u8]) -> Option<Self> {
        if input.len() < MIN_INPUT || output.len() < MIN_OUTPUT {
            return None;
        }
        Some(Connection {
            parser: Parser::new(input),
            out: OutBuf::new(output),
            session: Session::new(),
            closing: false,
            own_input: None,
            own_output: None,
        })
    }

    /// Announces that buffers of `n` bytes can be lent to this connection: requests and replies
    /// up to that size are then served (see the type's docs).
    pub fn set_lendable(&mut self, n: usize) {
        self.parser.set_lendable(n);
        self.out.set_lendable(n);
    }

    /// How many bytes of input buffer the buffered request needs, when that is more than the
    /// buffer holds (after [`Connection::process`] returned [`Progress::NeedInput`]).
    pub fn wants_input(&self) -> Option<usize> {
        if self.closing {
            return None;
        }
        self.parser.wants()
    }

    /// Whether the next reply needs a larger output buffer than the connection's (after
    /// [`Connection::process`] returned [`Progress::NeedOutput`] with no output pending).
    pub fn wants_output(&self) -> bool {
        !self.closing && self.out.wants_larger()
    }

    /// Lends `buf` as the input buffer, moving the buffered bytes into it; `Err(buf)` when a
    /// buffer is lent already or `buf` is not larger than the current one.
    pub fn lend_input(&mut self, buf: &'a mut [u8]) -> Result<(), &'a mut [u8]> {
        if self.own_input.is_some() || buf.len() <= self.parser.capacity() {
            return Err(buf);
        }
        self.own_input = Some(self.parser.swap(buf)?);
        Ok(())
    }

    /// Lends `buf` as the output buffer, moving the pending reply bytes into it; `Err(buf)`
    /// when a buffer is lent already or `buf` is not larger than the current one.
    pub fn lend_output(&mut self, buf: &'a mut [u8]) -> Result<(), &'a mut [u8]> {
        if self.own_output.is_some() || buf.len() <= self.out.capacity() {
            return Err(buf);
        }
        self.own_output = Some(self.out.swap(buf)?);
        Ok(())
    }

    /// Gives back the lent buffers the connection no longer needs (input: once what is buffered
    /// fits into its own buffer again; output: once the output is sent), as `(input, output)`.
    pub fn take_lent(&mut self) -> (Option<&'a mut [u8]>, Option<&'a mut [u8]>) {
        let mut input = None;
        if let Some(own) = self.own_input.take() {
            if self.parser.wants().is_none() && own.len() >= self.parser.buffered() {
                input = self.parser.swap(own).ok();
            } else {
                self.own_input = Some(own);
            }
        }
        let mut output = None;
        if let Some(own) = self.own_output.take() {
            if self.out.is_empty() {
                output = self.out.swap(own).ok();
            } else {
                self.own_output = Some(own);
            }
        }
        (input, output)
    }

    /// Ends the connection (its socket closed), giving back the buffers lent to it, as
    /// `(input, output)`, whatever they still held: a caller that lends one buffer to its
    /// connections in turn gets it back from a client that vanished mid-request.
    pub fn into_lent(mut self) -> (Option<&'a mut [u8]>, Option<&'a mut [u8]>) {
        let input = self.own_input.take().and_then(|own| {
            self.parser.clear();
            self.parser.swap(own).ok()
        });
        let output = self.own_output.take().and_then(|own| {
            self.out.clear();
            self.out.swap(own).ok()
        });
        (input, output)
    }

    /// Buffers as much of `data` as fits, returning how many bytes were taken; once the
    /// connection is closing, all of `data` is taken and discarded.
    pub fn receive(&mut self, data: &[u8]) -> usize {
        if self.closing {
            return data.len();
        }
        self.parser.receive(data)
    }

    /// Answers every complete buffered request, in order, as far as the output buffer allows.
    pub fn process(&mut self, store: &mut Store<'_>, now_ms: u64) -> Progress {
        while !self.closing {
            let cmd = match self.parser.next_command() {
                Ok(Some(cmd)) => cmd,
                Ok(None) => return Progress::NeedInput,
                Err(e) => {
                    let mut r = Reply::new(&mut self.out);
                    if write!(r, "-ERR Protocol error: {e}\r\n").is_err() {
                        r.rollback();
                        return Progress::NeedOutput;
                    }
                    self.closing = true;
                    break;
                }
            };
            let len = cmd.frame_len();
            match store.execute(&mut self.session, &cmd, now_ms, &mut self.out) {
                Err(_) => return Progress::NeedOutput,
                Ok(outcome) => {
                    self.parser.consume(len);
                    self.closing = outcome == Outcome::Close;
                }
            }
        }
        Progress::Close
    }

    /// Reply bytes waiting to be sent.
    pub fn output(&self) -> &[u8] {
        self.out.pending()
    }

    /// Drops the first `n` bytes of [`Connection::output`] (those sent).
    pub fn consume_output(&mut self, n: usize) {
        self.out.consume(n);
    }

    /// The connection's session (its selected database).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Whether the connection is to be closed once its output is sent.
    pub fn is_closing(&self) -> bool {
        self.closing
    }
}
