//! The collection types beside hashes: lists, sets, sorted sets and streams.
//!
//! Their commands have a dispatch table of their own ([`TABLE`]), looked at before the string
//! and hash commands' table in [`crate::commands`], and follow the same discipline (validate,
//! plan the resources against the budget, write or reserve the reply, then apply steps that
//! cannot fail). How each type is stored, and what that costs, is described in
//! [`crate::store`]. Redis 7.0's argument checks are made in Redis's order, so that a command
//! wrong in several ways gets Redis's error.

mod list;
mod set;
mod stream;
mod zset;

#[cfg(test)]
pub(crate) use zset::fmt_score;

use crate::commands::Res;
use crate::output::Reply;
use crate::parser::{parse_int, Command};
use crate::store::Store;

/// A command of this module's table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cmd {
    LPush,
    RPush,
    LPushX,
    RPushX,
    LPop,
    RPop,
    LRange,
    LLen,
    LIndex,
    LSet,
    LRem,
    LTrim,
    LInsert,
    LPos,
    LMove,
    RPopLPush,
    LMPop,
    SAdd,
    SRem,
    SPop,
    SMembers,
    SIsMember,
    SMIsMember,
    SCard,
    SRandMember,
    ZAdd,
    ZIncrBy,
    ZPopMin,
    ZPopMax,
    ZRange,
    ZRank,
    ZRevRank,
    ZScore,
    ZCard,
    ZRem,
    XAdd,
    XLen,
    XRange,
    XRevRange,
}

/// Name (lower case), arity as in Redis 7.0 (`n`: exactly `n` arguments with the name, `-n`:
/// at least `n`), command.
pub(crate) const TABLE: &[(&str, i32, Cmd)] = &[
    ("lpush", -3, Cmd::LPush),
    ("rpush", -3, Cmd::RPush),
    ("lpushx", -3, Cmd::LPushX),
    ("rpushx", -3, Cmd::RPushX),
    ("lpop", -2, Cmd::LPop),
    ("rpop", -2, Cmd::RPop),
    ("lrange", 4, Cmd::LRange),
    ("llen", 2, Cmd::LLen),
    ("lindex", 3, Cmd::LIndex),
    ("lset", 4, Cmd::LSet),
    ("lrem", 4, Cmd::LRem),
    ("ltrim", 4, Cmd::LTrim),
    ("linsert", 5, Cmd::LInsert),
    ("lpos", -3, Cmd::LPos),
    ("lmove", 5, Cmd::LMove),
    ("rpoplpush", 3, Cmd::RPopLPush),
    ("lmpop", -4, Cmd::LMPop),
    ("sadd", -3, Cmd::SAdd),
    ("srem", -3, Cmd::SRem),
    ("spop", -2, Cmd::SPop),
    ("smembers", 2, Cmd::SMembers),
    ("sismember", 3, Cmd::SIsMember),
    ("smismember", -3, Cmd::SMIsMember),
    ("scard", 2, Cmd::SCard),
    ("srandmember", -2, Cmd::SRandMember),
    ("zadd", -4, Cmd::ZAdd),
    ("zincrby", 4, Cmd::ZIncrBy),
    ("zpopmin", -2, Cmd::ZPopMin),
    ("zpopmax", -2, Cmd::ZPopMax),
    ("zrange", -4, Cmd::ZRange),
    ("zrank", 3, Cmd::ZRank),
    ("zrevrank", 3, Cmd::ZRevRank),
    ("zscore", 3, Cmd::ZScore),
    ("zcard", 2, Cmd::ZCard),
    ("zrem", -3, Cmd::ZRem),
    ("xadd", -5, Cmd::XAdd),
    ("xlen", 2, Cmd::XLen),
    ("xrange", -4, Cmd::XRange),
    ("xrevrange", -4, Cmd::XRevRange),
];

/// `-ERR value is out of range, must be positive` (a negative count).
pub(crate) const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

/// The optional count argument of the pop commands (`LPOP key count`, ...): `Ok(None)` when
/// absent, `Err` when not a non-negative integer (Redis 7.0 answers [`NOT_POSITIVE`] for both
/// a negative count and one that is no integer).
fn pop_count(c: &Command<'_>) -> Result<Option<u64>, &'static str> {
    match c.arg(2) {
        None => Ok(None),
        Some(a) => match parse_int(a) {
            Some(n) if n >= 0 => Ok(Some(n as u64)),
            _ => Err(NOT_POSITIVE),
        },
    }
}

/// The ranks `start..=stop` of a collection of `len` children, Redis's way: negative indices
/// count from the end, the range is clamped to the collection; `None` when it is empty.
fn rank_range(start: i64, stop: i64, len: u32) -> Option<(u32, u32)> {
    let len = i64::from(len);
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        None
    } else {
        Some((start as u32, stop as u32))
    }
}

impl Store<'_> {
    /// Executes a command of [`TABLE`] whose arity was checked.
    pub(crate) fn collection(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        match cmd {
            Cmd::LPush
            | Cmd::RPush
            | Cmd::LPushX
            | Cmd::RPushX
            | Cmd::LPop
            | Cmd::RPop
            | Cmd::LRange
            | Cmd::LLen
            | Cmd::LIndex
            | Cmd::LSet
            | Cmd::LRem
            | Cmd::LTrim
            | Cmd::LInsert
            | Cmd::LPos
            | Cmd::LMove
            | Cmd::RPopLPush
            | Cmd::LMPop => self.list_command(db, cmd, c, now, r),
            Cmd::SAdd
            | Cmd::SRem
            | Cmd::SPop
            | Cmd::SMembers
            | Cmd::SIsMember
            | Cmd::SMIsMember
            | Cmd::SCard
            | Cmd::SRandMember => self.set_command(db, cmd, c, now, r),
            Cmd::ZAdd
            | Cmd::ZIncrBy
            | Cmd::ZPopMin
            | Cmd::ZPopMax
            | Cmd::ZRange
            | Cmd::ZRank
            | Cmd::ZRevRank
            | Cmd::ZScore
            | Cmd::ZCard
            | Cmd::ZRem => self.zset_command(db, cmd, c, now, r),
            Cmd::XAdd | Cmd::XLen | Cmd::XRange | Cmd::XRevRange => {
                self.stream_command(db, cmd, c, now, r)
            }
        }
    }
}
