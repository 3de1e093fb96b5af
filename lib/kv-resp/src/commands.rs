//! Command execution: dispatch, arity checks and one handler per command.
//!
//! The server commands are here; the collection types (lists, sets, sorted sets, streams,
//! hashes), the string commands, expiry and the commands on keys of any type have modules of
//! their own, each with its own dispatch table, looked at first.
//!
//! Every handler follows the same discipline, which is what makes a command atomic and the
//! output contract hold (see [`crate::output`]):
//!
//! 1. validate the arguments and look everything up (the only change allowed here is reclaiming
//!    expired keys, which is invisible: they behave as absent anyway);
//! 2. check the resources the command's steps need, freeing before taking, against the budget
//!    (after a full sweep of expired keys if it does not fit at first); `-OOM` otherwise;
//! 3. write the reply (or reserve its bound), returning early if the output buffer is full;
//! 4. apply the change, in steps that cannot fail any more.

use crate::output::{fmt_i64, Counter, Overflow, Reply};
use crate::parser::{parse_int, Command};
use crate::store::{Budget, Kind, Store, DATABASES, INFO_SECTION_MAX};
use crate::{collections, expire, keyspace, strings};

/// What a connection holds between commands: its selected database and its client ID.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session {
    db: u8,
    /// The ID `HELLO` reports, taken from the store's counter on first use (0: none yet).
    id: u64,
}

impl Session {
    /// A session on database 0.
    pub fn new() -> Self {
        Session { db: 0, id: 0 }
    }

    /// The session's client ID, taken from `store`'s counter (1, 2, ...) the first time it is
    /// asked for.
    fn id(&mut self, store: &mut Store<'_>) -> u64 {
        if self.id == 0 {
            store.clients += 1;
            self.id = store.clients;
        }
        self.id
    }

    /// The selected database (0 to 15).
    pub fn db(&self) -> usize {
        self.db as usize
    }
}

/// What the caller does after a command was executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go on with the next command.
    Continue,
    /// Send the pending output, then close the connection (`QUIT`).
    Close,
}

/// The command's reply did not fit into the output buffer's free space: nothing was written and
/// nothing changed. Drain the output buffer and execute the same command again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedOutput;

pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
pub(crate) const NOT_INT: &str = "ERR value is not an integer or out of range";
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub(crate) const SYNTAX: &str = "ERR syntax error";
/// The Redis version this server answers as (`INFO`'s `redis_version`, `HELLO`'s `version`).
const VERSION: &str = "7.0.0";
const TOO_BIG: &str = "ERR reply exceeds the connection's output buffer";

pub(crate) type Res = Result<(), Overflow>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Ping,
    Echo,
    Select,
    FlushAll,
    FlushDb,
    DbSize,
    Info,
    Command,
    Config,
    Function,
    Quit,
    Hello,
    Reset,
}

/// Name (lower case, as in error messages), arity as in Redis (n: exactly n arguments with the
/// name, -n: at least n), command.
const TABLE: &[(&str, i32, Cmd)] = &[
    ("ping", -1, Cmd::Ping),
    ("echo", 2, Cmd::Echo),
    ("select", 2, Cmd::Select),
    ("flushall", -1, Cmd::FlushAll),
    ("flushdb", -1, Cmd::FlushDb),
    ("dbsize", 1, Cmd::DbSize),
    ("info", -1, Cmd::Info),
    ("command", -1, Cmd::Command),
    ("config", -2, Cmd::Config),
    ("function", -2, Cmd::Function),
    ("quit", -1, Cmd::Quit),
    ("hello", -1, Cmd::Hello),
    ("reset", 1, Cmd::Reset),
];

/// Whether `a` is `b`, ignoring ASCII case (command names and options).
pub(crate) fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// The entry of command `name` (any case) in one of the command tables: its name, arity and
/// command.
fn entry<C: Copy>(table: &[(&'static str, i32, C)], name: &[u8]) -> Option<(&'static str, i32, C)> {
    table.iter().copied().find(|(n, _, _)| eq(name, n))
}

/// Whether `argc` arguments (the name included) match `arity` (Redis's convention: `n` means
/// exactly `n`, `-n` at least `n`).
fn arity_ok(arity: i32, argc: i32) -> bool {
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// Runs `f` if `argc` matches `arity`, else answers the arity error for command `name`.
fn checked(
    r: &mut Reply<'_, '_>,
    name: &str,
    arity: i32,
    argc: i32,
    f: impl FnOnce(&mut Reply<'_, '_>) -> Res,
) -> Res {
    if arity_ok(arity, argc) {
        f(r)
    } else {
        wrong_arity(r, name)
    }
}

/// `-ERR wrong number of arguments for '<name>' command`.
pub(crate) fn wrong_arity(r: &mut Reply<'_, '_>, name: &str) -> Res {
    r.raw(b"-ERR wrong number of arguments for '")?;
    r.raw(name.as_bytes())?;
    r.raw(b"' command\r\n")
}

/// Consecutive argument pairs, from `args` on.
pub(crate) fn pairs<'p>(
    mut args: impl Iterator<Item = &'p [u8]>,
) -> impl Iterator<Item = (&'p [u8], &'p [u8])> {
    core::iter::from_fn(move || Some((args.next()?, args.next()?)))
}

/// Writes `bytes` (at most `max` of them) with CR and LF replaced by spaces, as Redis does for
/// text echoed in error replies.
pub(crate) fn sanitized(r: &mut Reply<'_, '_>, bytes: &[u8], max: usize) -> Res {
    let bytes = &bytes[..bytes.len().min(max)];
    for (i, chunk) in bytes.split(|&b| b == b'\r' || b == b'\n').enumerate() {
        if i > 0 {
            r.raw(b" ")?;
        }
        r.raw(chunk)?;
    }
    Ok(())
}

impl Store<'_> {
    /// Executes one command for `session` at time `now_ms` (the caller's clock, in ms), writing
    /// its reply into `out`.
    ///
    /// `Err(NeedOutput)`: the reply did not fit into `out`'s free space; nothing was written and
    /// nothing changed: drain `out` and call again with the same command. A reply that would not
    /// fit even into the empty buffer is replaced by an error reply instead (the command then
    /// changes nothing), so an empty buffer of at least [`crate::MIN_OUTPUT`] bytes always makes
    /// progress; unless `out` can be given a larger buffer ([`crate::OutBuf::set_lendable`]),
    /// which `out` then asks for ([`crate::OutBuf::wants_larger`]).
    pub fn execute(
        &mut self,
        session: &mut Session,
        cmd: &Command<'_>,
        now_ms: u64,
        out: &mut crate::OutBuf<'_>,
    ) -> Result<Outcome, NeedOutput> {
        self.sweep_some(now_ms);
        let mut r = Reply::new(out);
        match self.dispatch(session, cmd, now_ms, &mut r) {
            Ok(outcome) => Ok(outcome),
            Err(Overflow) => {
                r.rollback();
                if r.started_empty() && r.ask_larger() {
                    Err(NeedOutput)
                } else if r.started_empty() && r.error(TOO_BIG).is_ok() {
                    Ok(Outcome::Continue)
                } else {
                    r.rollback();
                    Err(NeedOutput)
                }
            }
        }
    }

    fn dispatch(
        &mut self,
        session: &mut Session,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Result<Outcome, Overflow> {
        let name = c.arg(0).unwrap_or(b"");
        let argc = c.argc() as i32;
        // ---- Commands with tables of their own: the collection types, the string commands
        // beyond GET/SET and the counters, the keyspace commands. ----
        let db = session.db;
        if let Some((n, arity, cmd)) = entry(collections::TABLE, name) {
            checked(r, n, arity, argc, |r| self.collection(db, cmd, c, now, r))?;
            return Ok(Outcome::Continue);
        }
        if let Some((n, arity, cmd)) = entry(strings::TABLE, name) {
            checked(r, n, arity, argc, |r| {
                self.string_command(db, (n, cmd), c, now, r)
            })?;
            return Ok(Outcome::Continue);
        }
        if let Some((n, arity, cmd)) = entry(expire::TABLE, name) {
            checked(r, n, arity, argc, |r| {
                self.expire_command(db, (n, cmd), c, now, r)
            })?;
            return Ok(Outcome::Continue);
        }
        if let Some((n, arity, cmd)) = entry(keyspace::TABLE, name) {
            checked(r, n, arity, argc, |r| {
                self.keyspace_command(db, cmd, c, now, r)
            })?;
            return Ok(Outcome::Continue);
        }
        // ---- End of the commands with tables of their own. ----
        let Some((cname, arity, cmd)) = entry(TABLE, name) else {
            self.unknown(c, r)?;
            return Ok(Outcome::Continue);
        };
        let bad_arity = !arity_ok(arity, argc) || (matches!(cmd, Cmd::Ping) && argc > 2);
        if bad_arity {
            wrong_arity(r, cname)?;
            return Ok(Outcome::Continue);
        }
        let a1 = c.arg(1).unwrap_or(b"");
        match cmd {
            Cmd::Ping => match c.arg(1) {
                Some(msg) => r.bulk(msg)?,
                None => r.simple(b"PONG")?,
            },
            Cmd::Echo => r.bulk(a1)?,
            Cmd::Select => match parse_int(a1) {
                None => r.error(NOT_INT)?,
                Some(n) if n < 0 || n >= DATABASES as i64 => {
                    r.error("ERR DB index is out of range")?
                }
                Some(n) => {
                    r.ok()?;
                    session.db = n as u8;
                }
            },
            Cmd::FlushAll | Cmd::FlushDb => {
                let opt = c.arg(1);
                if c.argc() > 2 || opt.is_some_and(|o| !eq(o, "async") && !eq(o, "sync")) {
                    r.error(SYNTAX)?;
                } else {
                    r.ok()?;
                    if cmd == Cmd::FlushAll {
                        self.clear_all();
                    } else {
                        self.clear_db(db);
                    }
                }
            }
            Cmd::DbSize => {
                self.sweep_all(now);
                r.int(i64::from(self.keys[db as usize]))?;
            }
            Cmd::Info => {
                self.sweep_all(now);
                // The server's section is written once, here, so that both passes below (the
                // length, then the text) see the same bytes.
                let mut buf = [0u8; INFO_SECTION_MAX];
                let mut section = SliceWriter {
                    buf: &mut buf,
                    len: 0,
                };
                let extra = match self.info_section {
                    None => Ok(""),
                    Some(write) => match write(&mut section) {
                        Ok(()) => Ok(section.text()),
                        Err(_) => Err(()),
                    },
                };
                let mut n = Counter(0);
                // Writing into a counter cannot fail.
                let _ = self.info(&mut n, extra);
                r.raw(b"$")?;
                r.raw(fmt_i64(n.0 as i64, &mut [0; 24]))?;
                r.raw(b"\r\n")?;
                r.reserve(n.0 + 2)?;
                self.info(r, extra).map_err(|_| Overflow)?;
                r.raw(b"\r\n")?;
            }
            Cmd::Command => r.array(0)?,
            Cmd::Config => self.config(c, r)?,
            Cmd::Function => self.function(c, r)?,
            Cmd::Quit => {
                r.ok()?;
                return Ok(Outcome::Close);
            }
            Cmd::Hello => self.hello(session, c, r)?,
            Cmd::Reset => {
                r.simple(b"RESET")?;
                session.db = 0;
            }
        }
        Ok(Outcome::Continue)
    }

    /// `-ERR unknown command '<name>', with args beginning with: '<a>' '<b>' ` (Redis 7's text,
    /// each part truncated at 128 bytes).
    fn unknown(&self, c: &Command<'_>, r: &mut Reply<'_, '_>) -> Res {
        r.raw(b"-ERR unknown command '")?;
        sanitized(r, c.arg(0).unwrap_or(b""), 128)?;
        r.raw(b"', with args beginning with: ")?;
        let mut len = 0;
        for a in c.args().skip(1) {
            if len >= 128 {
                break;
            }
            let take = a.len().min(128 - len);
            r.raw(b"'")?;
            sanitized(r, a, take)?;
            r.raw(b"' ")?;
            len += take + 3;
        }
        r.raw(b"\r\n")
    }

    /// The key `key` if it is of kind `kind` (`None`: absent), `Err` if it holds another type.
    pub(crate) fn find_kind(
        &mut self,
        db: u8,
        key: &[u8],
        kind: Kind,
        now: u64,
    ) -> Result<Option<u32>, ()> {
        match self.find_key(db, key, now) {
            Some(e) if self.slots[e as usize].kind != kind => Err(()),
            h => Ok(h),
        }
    }

    /// Whether `plan` fits the budget, after reclaiming every expired key if it did not at first.
    pub(crate) fn fits<T>(
        &mut self,
        now: u64,
        mut plan: impl FnMut(&mut Self) -> (bool, T),
    ) -> (bool, T) {
        let first = plan(self);
        if first.0 {
            return first;
        }
        self.sweep_all(now);
        plan(self)
    }

    /// Whether `key` in `db` fits the budget as one entry of `need` bytes, in place of what the
    /// key holds now (if anything), sweeping expired keys first if it does not fit.
    pub(crate) fn fits_key(&mut self, db: u8, key: &[u8], need: usize, now: u64) -> bool {
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let e = st.find_key(db, key, now);
            b.step(e.map_or((0, 0), |e| st.footprint(e)), (need, 1));
            (b.ok(), ())
        });
        ok
    }

    /// The `INFO` text (its sections are always all written), ending with the server's own
    /// section `extra` (`Err`: it did not fit its buffer).
    /// `HELLO [protover [AUTH username password] [SETNAME name]]`: the server's description as
    /// Redis 7.0 gives it to a RESP2 session (a map, sent as a flat array). This server speaks
    /// RESP2 only, so `HELLO 3` is refused as an unsupported version, as any version but 2.
    /// `AUTH` succeeds for the user `default` (there are no passwords); `SETNAME` is accepted
    /// and has no effect (there is no `CLIENT GETNAME`).
    fn hello(
        &mut self,
        session: &mut Session,
        c: &Command<'_>,
        r: &mut Reply<'_, '_>,
    ) -> Result<(), Overflow> {
        if let Some(v) = c.arg(1) {
            match parse_int(v) {
                None => return r.error("ERR Protocol version is not an integer or out of range"),
                Some(2) => {}
                Some(_) => return r.error("NOPROTO unsupported protocol version"),
            }
        }
        let mut j = 2;
        while let Some(opt) = c.arg(j) {
            let more = c.argc() - 1 - j;
            if eq(opt, "auth") && more >= 2 {
                if !eq(c.arg(j + 1).unwrap_or(b""), "default") {
                    return r
                        .error("WRONGPASS invalid username-password pair or user is disabled.");
                }
                j += 3;
            } else if eq(opt, "setname") && more >= 1 {
                j += 2;
            } else {
                r.raw(b"-ERR Syntax error in HELLO option '")?;
                sanitized(r, opt, 128)?;
                return r.raw(b"'\r\n");
            }
        }
        let id = session.id(self) as i64;
        r.array(14)?;
        for (name, value) in [("server", "redis"), ("version", VERSION)] {
            r.bulk(name.as_bytes())?;
            r.bulk(value.as_bytes())?;
        }
        r.bulk(b"proto")?;
        r.int(2)?;
        r.bulk(b"id")?;
        r.int(id)?;
        for (name, value) in [("mode", "standalone"), ("role", "master")] {
            r.bulk(name.as_bytes())?;
            r.bulk(value.as_bytes())?;
        }
        r.bulk(b"modules")?;
        r.array(0)
    }

    fn info(&self, w: &mut impl core::fmt::Write, extra: Result<&str, ()>) -> core::fmt::Result {
        write!(
            w,
            "# Server\r\nredis_version:{VERSION}\r\nredis_mode:standalone\r\n\
             kv_resp_version:{}\r\n\r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\n\
             maxmemory_policy:noeviction\r\nused_slots:{}\r\nmax_slots:{}\r\n\r\n# Keyspace\r\n",
            env!("CARGO_PKG_VERSION"),
            self.used,
            self.cap,
            self.used_slots(),
            self.nslots,
        )?;
        for db in 0..DATABASES {
            if self.keys[db] == 0 {
                continue;
            }
            let expires = self.slots[..self.nslots]
                .iter()
                .filter(|s| s.db as usize == db && s.kind.is_key() && s.expire != 0)
                .count();
            write!(
                w,
                "db{db}:keys={},expires={expires},avg_ttl=0\r\n",
                self.keys[db]
            )?;
        }
        match extra {
            Ok("") => Ok(()),
            Ok(text) => write!(w, "\r\n{text}"),
            Err(()) => write!(
                w,
                "\r\n# Extra\r\ninfo_section_error:longer than {INFO_SECTION_MAX} bytes\r\n"
            ),
        }
    }
}

/// A `fmt::Write` into a fixed buffer that fails rather than truncate.
pub(crate) struct SliceWriter<'b> {
    pub(crate) buf: &'b mut [u8],
    pub(crate) len: usize,
}

impl SliceWriter<'_> {
    /// What was written: whole `&str`s, so valid UTF-8.
    pub(crate) fn text(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl core::fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(core::fmt::Error)?;
        self.buf
            .get_mut(self.len..end)
            .ok_or(core::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
