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
pub struct Connection<'a> {
    parser: Parser<'a>,
    out: OutBuf<'a>,
    session: Session,
    closing: bool,
}

impl<'a> Connection<'a> {
    /// A connection buffering requests in `input` (its size bounds a request) and replies in
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
        })
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
