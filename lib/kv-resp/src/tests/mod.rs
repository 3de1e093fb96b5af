//! Host tests: per-command behaviour, the parser through the connection, property tests.

extern crate std;

use std::boxed::Box;
use std::string::String;
use std::vec;
use std::vec::Vec;

use crate::{Connection, OutBuf, Parser, Progress, Session, Slot, Store};

mod admin;
mod collections;
mod commands;
mod connection;
mod hash;
mod list;
mod longdouble;
mod props;
mod protocol;
mod set;
mod strings;
mod zset;

/// A store over leaked storage (tests only).
pub(crate) fn store(bytes: usize, slots: usize) -> Store<'static> {
    Store::new(
        Box::leak(vec![0u8; bytes].into_boxed_slice()),
        Box::leak(vec![Slot::EMPTY; slots].into_boxed_slice()),
    )
}

/// RESP encoding of one command.
pub(crate) fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

/// Runs raw input through a parser and the store with large buffers; returns the replies.
pub(crate) fn run(st: &mut Store<'_>, s: &mut Session, input: &[u8], now: u64) -> Vec<u8> {
    let mut inbuf = vec![0u8; input.len().max(64)];
    let mut outbuf = vec![0u8; 1 << 20];
    let mut p = Parser::new(&mut inbuf);
    assert_eq!(p.receive(input), input.len());
    let mut out = OutBuf::new(&mut outbuf);
    let mut res = Vec::new();
    loop {
        match p.next_command() {
            Ok(Some(c)) => {
                let n = c.frame_len();
                st.execute(s, &c, now, &mut out).expect("output space");
                p.consume(n);
            }
            Ok(None) => break,
            Err(e) => {
                res.extend_from_slice(format!("-ERR Protocol error: {e}\r\n").as_bytes());
                break;
            }
        }
        res.extend_from_slice(out.pending());
        let n = out.pending().len();
        out.consume(n);
    }
    st.check();
    res
}

/// Runs one command (given as arguments) at time `now`; returns its reply as text.
pub(crate) fn cmd_at(st: &mut Store<'_>, s: &mut Session, args: &[&str], now: u64) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&run(st, s, &encode(&args), now)).into_owned()
}

/// Drives a [`Connection`] with input split into the given fragments and output drained
/// `drain` bytes at a time; returns all output and whether it asked to close.
pub(crate) fn drive(
    st: &mut Store<'_>,
    conn: &mut Connection<'_>,
    fragments: &[&[u8]],
    drain: usize,
) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut closed = false;
    for frag in fragments {
        let mut rest: &[u8] = frag;
        loop {
            let n = conn.receive(rest);
            rest = &rest[n..];
            let p = conn.process(st, 0);
            let take = conn.output().len().min(drain);
            out.extend_from_slice(&conn.output()[..take]);
            conn.consume_output(take);
            match p {
                Progress::Close => {
                    out.extend_from_slice(conn.output());
                    let n = conn.output().len();
                    conn.consume_output(n);
                    closed = true;
                }
                Progress::NeedOutput => continue,
                Progress::NeedInput if !rest.is_empty() => continue,
                Progress::NeedInput => {}
            }
            break;
        }
        if closed {
            break;
        }
    }
    while !closed {
        let p = conn.process(st, 0);
        let take = conn.output().len().min(drain);
        out.extend_from_slice(&conn.output()[..take]);
        conn.consume_output(take);
        if p == Progress::Close && conn.output().is_empty() {
            closed = true;
        }
        if p != Progress::NeedOutput && conn.output().is_empty() {
            break;
        }
    }
    (out, closed)
}

/// A store and a session at a fixed time, for one-command-at-a-time tests.
pub(crate) struct T {
    pub(crate) st: Store<'static>,
    pub(crate) s: Session,
    pub(crate) now: u64,
}

impl T {
    /// 64 KiB and 1024 slots.
    pub(crate) fn new() -> Self {
        T::sized(1 << 16, 1024)
    }
    /// `bytes` of arena and `slots` slots.
    pub(crate) fn sized(bytes: usize, slots: usize) -> Self {
        T {
            st: store(bytes, slots),
            s: Session::new(),
            now: 1_000,
        }
    }
    /// One command, its reply as text.
    pub(crate) fn c(&mut self, args: &[&str]) -> String {
        cmd_at(&mut self.st, &mut self.s, args, self.now)
    }
    /// One inline command line, its reply as text.
    pub(crate) fn line(&mut self, text: &str) -> String {
        let mut input = text.as_bytes().to_vec();
        input.extend_from_slice(b"\r\n");
        String::from_utf8_lossy(&run(&mut self.st, &mut self.s, &input, self.now)).into_owned()
    }
}
