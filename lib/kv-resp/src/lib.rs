//! `kv-resp`: the core of a key-value server speaking RESP2, the Redis protocol, with no
//! allocator and no I/O of its own.
//!
//! It is meant to run as a user program on the microkernel, one instance per core, behind a
//! TCP stack such as smoltcp; like smoltcp, it works in storage the caller provides and is
//! driven by the caller:
//!
//! * a [`Store`] holds 16 databases in a caller-provided byte arena (the memory budget,
//!   `maxmemory`) and slot table (the bound on keys and on the collections' elements): see
//!   [`store`] for the memory model and why there is no allocator;
//! * a [`Connection`] per client bundles a streaming [`Parser`] over an input buffer, an
//!   [`OutBuf`] for replies and a [`Session`] (the selected database);
//! * time is the caller's: every call takes `now_ms`, against which `EX`/`PX` expiry is
//!   measured.
//!
//! ```
//! use kv_resp::{Connection, Progress, Slot, Store};
//!
//! let mut arena = [0u8; 4096];
//! let mut slots = [Slot::EMPTY; 64];
//! let mut store = Store::new(&mut arena, &mut slots);
//! let (mut input, mut output) = ([0u8; 512], [0u8; 512]);
//! let mut conn = Connection::new(&mut input, &mut output).unwrap();
//! conn.receive(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n");
//! assert_eq!(conn.process(&mut store, 0), Progress::NeedInput);
//! assert_eq!(conn.output(), b"+OK\r\n$1\r\nv\r\n");
//! ```
//!
//! # Guarantees
//!
//! * **Atomic commands, no eviction.** A write that would exceed the arena or the slot table is
//!   answered `-OOM command not allowed when used memory > 'maxmemory'.` and changes nothing;
//!   an acknowledged write is never lost or evicted (Redis's `noeviction` policy).
//! * **No lost replies.** See [`output`]: a command runs only when its reply fits; otherwise
//!   the caller drains the output and retries, and the command has not run.
//! * **Bounded input.** A request longer than the input buffer (or than the larger buffer the
//!   caller can lend, [`Connection::set_lendable`]), a bad length header or any other malformed
//!   input is answered `-ERR Protocol error: ...` and the connection is to be closed
//!   ([`Progress::Close`]), as Redis does. No input makes the crate panic.
//! * **Large requests and replies in lent buffers.** A caller with a larger buffer to lend
//!   (one per core, lent to one connection at a time) is asked for it when a request or a
//!   reply exceeds a connection's own buffers, and gets it back once that request was answered
//!   or that reply drained; while it waits, the request stays buffered and the command has not
//!   run (see [`Connection`]).
//!
//! # Commands
//!
//! `PING`, `ECHO`, `QUIT`, `SELECT`, `HELLO` (RESP2 only: `HELLO` and `HELLO 2` answer the
//! server's description, any other version `-NOPROTO`), `RESET`, `COMMAND` (an empty array: enough for redis-cli's
//! `COMMAND DOCS`), `CONFIG GET` (glob patterns), `CONFIG SET` and `CONFIG RESETSTAT` (the
//! parameters of `src/admin.rs`'s table), `FUNCTION FLUSH`, `INFO`, `DBSIZE`, `FLUSHALL`, `FLUSHDB`;
//! keys of any type: `DEL`, `UNLINK`, `EXISTS`, `TOUCH`, `TYPE`, `RENAME`, `RENAMENX`, `COPY`
//! (`DB`, `REPLACE`), `MOVE`, `SWAPDB`, `KEYS` (glob patterns), `SCAN` (`MATCH`, `COUNT`,
//! `TYPE`; every key present for a whole scan is returned, see `src/keyspace.rs`),
//! `RANDOMKEY`, `MEMORY USAGE` (the bytes the key takes in the arena, headers included);
//! strings: `GET`, `SET` (with `EX`, `PX`, `EXAT`, `PXAT`, `KEEPTTL`, `NX`, `XX`, `GET`),
//! `SETNX`, `SETEX`, `PSETEX`, `GETSET`, `GETDEL`, `GETEX`, `MGET`, `MSET`, `MSETNX`,
//! `APPEND`, `STRLEN`, `GETRANGE`, `SUBSTR`, `SETRANGE`, `SETBIT`, `GETBIT`, `LCS` (`LEN`,
//! `IDX`, `MINMATCHLEN`, `WITHMATCHLEN`), `INCR`, `INCRBY`, `DECR`, `DECRBY`, `INCRBYFLOAT`
//! (in software `long double` arithmetic, so that its replies are Redis's on x86_64 to the
//! digit);
//! expiry (of a key of any type): `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with `NX`,
//! `XX`, `GT`, `LT`), `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`, `PERSIST`, and `TIME`;
//! hashes: `HSET`, `HMSET`, `HSETNX`, `HGET`, `HMGET`, `HGETALL`, `HKEYS`, `HVALS`, `HDEL`,
//! `HEXISTS`, `HLEN`, `HSTRLEN`, `HINCRBY`, `HINCRBYFLOAT` (in the same `long double`
//! arithmetic as `INCRBYFLOAT`), `HRANDFIELD` (with a count, negative for repeats, and
//! `WITHVALUES`), `HSCAN` (`MATCH`, `COUNT`);
//! lists: `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`, `LPOP`, `RPOP` (with a count), `LMPOP`
//! (`COUNT`), `LRANGE`, `LLEN`, `LINDEX`, `LPOS` (`RANK`, `COUNT`, `MAXLEN`), `LSET`, `LINSERT`,
//! `LREM`, `LTRIM`, `LMOVE`, `RPOPLPUSH`;
//! sets: `SADD`, `SREM`, `SPOP` (with a count), `SMEMBERS`, `SISMEMBER`, `SMISMEMBER`, `SCARD`,
//! `SRANDMEMBER` (with a count, negative for repeats), `SMOVE`, `SINTER`, `SINTERCARD`
//! (`LIMIT`), `SUNION`, `SDIFF`, `SINTERSTORE`, `SUNIONSTORE`, `SDIFFSTORE`, `SSCAN` (`MATCH`,
//! `COUNT`);
//! sorted sets: `ZADD` (`NX`, `XX`, `GT`, `LT`, `CH`, `INCR`), `ZINCRBY`, `ZPOPMIN`, `ZPOPMAX`
//! (with a count), `ZMPOP`, `ZRANGE` (by rank, `BYSCORE` or `BYLEX`, with `REV`, `LIMIT`,
//! `WITHSCORES`), `ZRANGESTORE`, `ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`,
//! `ZRANGEBYLEX`, `ZREVRANGEBYLEX`, `ZCOUNT`, `ZLEXCOUNT`, `ZREMRANGEBYRANK`,
//! `ZREMRANGEBYSCORE`, `ZREMRANGEBYLEX`, `ZRANK`, `ZREVRANK`, `ZSCORE`, `ZMSCORE`, `ZCARD`,
//! `ZREM`, `ZRANDMEMBER` (with a count, negative for repeats, `WITHSCORES`), `ZUNION`,
//! `ZINTER`, `ZDIFF` and their `STORE` forms (`WEIGHTS`, `AGGREGATE`; sets count as sorted sets
//! of score 1), `ZINTERCARD` (`LIMIT`), `ZSCAN` (`MATCH`, `COUNT`);
//! streams: `XADD` (`*`, `<ms>-*` and explicit IDs, `NOMKSTREAM`), `XLEN`, `XRANGE`,
//! `XREVRANGE` (`-`, `+`, exclusive `(` bounds, `COUNT`).
//! That is every command of redis-benchmark's default test list (XADD's from 7.2 on). Names are
//! case-insensitive; replies and error texts follow Redis 7.0 (scores are formatted as its
//! `%.17g`).
//!
//! # Not implemented, and why
//!
//! * Blocking commands (`BLPOP`, `BZPOPMIN`, `XREAD BLOCK`), which need a connection to wait
//!   on another's write.
//! * Stream trimming (`XADD ... MAXLEN`/`MINID`, `XTRIM`, `XDEL`: answered with an error),
//!   consumer groups and `XREAD`: a stream here only grows, so its last ID is always its last
//!   entry's (Redis keeps an emptied stream's last ID, which needs a place of its own).
//! * `OBJECT` (encodings, reference counts, idle times), `DEBUG` and the other `MEMORY`
//!   subcommands: Redis's internals; here every type has one representation.
//! * The bit commands beyond `SETBIT`/`GETBIT` (`BITCOUNT`, `BITOP`, `BITPOS`, `BITFIELD`).
//! * Persistence, replication, pub/sub, transactions (`MULTI`), scripting, authentication,
//!   RESP3 (`HELLO 3` is answered `-NOPROTO unsupported protocol version`): outside a
//!   benchmark server's needs.
//! * Keys are hashed with FNV-1a, unseeded: a client that wants to can make chains long
//!   (hash flooding). The table still works, only slower.
//! * Sorted sets are ordered linked lists, not skip lists: inserting at a random rank is O(n)
//!   (see [`store`]).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

mod admin;
mod collections;
pub mod commands;
pub mod connection;
mod expire;
mod keyspace;
mod longdouble;
pub mod output;
pub mod parser;
mod repeats;
pub mod store;
mod strings;

pub use commands::{NeedOutput, Outcome, Session};
pub use connection::{Connection, Progress, MIN_INPUT};
pub use output::{OutBuf, MIN_OUTPUT};
pub use parser::{Args, Command, Parser, ProtocolError};
pub use store::{InfoSection, Slot, Store, DATABASES, INFO_SECTION_MAX};

#[cfg(test)]
mod tests;
