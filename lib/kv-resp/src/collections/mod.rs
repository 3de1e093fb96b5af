//! The collection types: lists, sets, sorted sets, streams and hashes.
//!
//! Their commands have a dispatch table of their own ([`TABLE`]), looked at before the other
//! tables in [`crate::commands`], and follow the same discipline (validate, plan the resources
//! against the budget, write or reserve the reply, then apply steps that cannot fail). How each type is stored, and what that costs, is described in
//! [`crate::store`]. Redis 7.0's argument checks are made in Redis's order, so that a command
//! wrong in several ways gets Redis's error.

mod hash;
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
    SMove,
    SInter,
    SInterStore,
    SInterCard,
    SUnion,
    SUnionStore,
    SDiff,
    SDiffStore,
    SScan,
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
    ZRevRange,
    ZRangeByScore,
    ZRevRangeByScore,
    ZRangeByLex,
    ZRevRangeByLex,
    ZRangeStore,
    ZCount,
    ZLexCount,
    ZRemRangeByRank,
    ZRemRangeByScore,
    ZRemRangeByLex,
    ZMScore,
    ZUnion,
    ZInter,
    ZDiff,
    ZUnionStore,
    ZInterStore,
    ZDiffStore,
    ZInterCard,
    ZMPop,
    ZRandMember,
    ZScan,
    XAdd,
    XLen,
    XRange,
    XRevRange,
    HSet,
    HMSet,
    HSetNx,
    HGet,
    HMGet,
    HGetAll,
    HKeys,
    HVals,
    HDel,
    HExists,
    HLen,
    HStrLen,
    HIncrBy,
    HIncrByFloat,
    HRandField,
    HScan,
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
    ("smove", 4, Cmd::SMove),
    ("sinter", -2, Cmd::SInter),
    ("sinterstore", -3, Cmd::SInterStore),
    ("sintercard", -3, Cmd::SInterCard),
    ("sunion", -2, Cmd::SUnion),
    ("sunionstore", -3, Cmd::SUnionStore),
    ("sdiff", -2, Cmd::SDiff),
    ("sdiffstore", -3, Cmd::SDiffStore),
    ("sscan", -3, Cmd::SScan),
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
    ("zrevrange", -4, Cmd::ZRevRange),
    ("zrangebyscore", -4, Cmd::ZRangeByScore),
    ("zrevrangebyscore", -4, Cmd::ZRevRangeByScore),
    ("zrangebylex", -4, Cmd::ZRangeByLex),
    ("zrevrangebylex", -4, Cmd::ZRevRangeByLex),
    ("zrangestore", -5, Cmd::ZRangeStore),
    ("zcount", 4, Cmd::ZCount),
    ("zlexcount", 4, Cmd::ZLexCount),
    ("zremrangebyrank", 4, Cmd::ZRemRangeByRank),
    ("zremrangebyscore", 4, Cmd::ZRemRangeByScore),
    ("zremrangebylex", 4, Cmd::ZRemRangeByLex),
    ("zmscore", -3, Cmd::ZMScore),
    ("zunion", -3, Cmd::ZUnion),
    ("zinter", -3, Cmd::ZInter),
    ("zdiff", -3, Cmd::ZDiff),
    ("zunionstore", -4, Cmd::ZUnionStore),
    ("zinterstore", -4, Cmd::ZInterStore),
    ("zdiffstore", -4, Cmd::ZDiffStore),
    ("zintercard", -3, Cmd::ZInterCard),
    ("zmpop", -4, Cmd::ZMPop),
    ("zrandmember", -2, Cmd::ZRandMember),
    ("zscan", -3, Cmd::ZScan),
    ("xadd", -5, Cmd::XAdd),
    ("xlen", 2, Cmd::XLen),
    ("xrange", -4, Cmd::XRange),
    ("xrevrange", -4, Cmd::XRevRange),
    ("hset", -4, Cmd::HSet),
    ("hmset", -4, Cmd::HMSet),
    ("hsetnx", 4, Cmd::HSetNx),
    ("hget", 3, Cmd::HGet),
    ("hmget", -3, Cmd::HMGet),
    ("hgetall", 2, Cmd::HGetAll),
    ("hkeys", 2, Cmd::HKeys),
    ("hvals", 2, Cmd::HVals),
    ("hdel", -3, Cmd::HDel),
    ("hexists", 3, Cmd::HExists),
    ("hlen", 2, Cmd::HLen),
    ("hstrlen", 3, Cmd::HStrLen),
    ("hincrby", 4, Cmd::HIncrBy),
    ("hincrbyfloat", 4, Cmd::HIncrByFloat),
    ("hrandfield", -2, Cmd::HRandField),
    ("hscan", -3, Cmd::HScan),
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
            | Cmd::SRandMember
            | Cmd::SMove
            | Cmd::SInter
            | Cmd::SInterStore
            | Cmd::SInterCard
            | Cmd::SUnion
            | Cmd::SUnionStore
            | Cmd::SDiff
            | Cmd::SDiffStore
            | Cmd::SScan => self.set_command(db, cmd, c, now, r),
            Cmd::ZAdd
            | Cmd::ZIncrBy
            | Cmd::ZPopMin
            | Cmd::ZPopMax
            | Cmd::ZRange
            | Cmd::ZRank
            | Cmd::ZRevRank
            | Cmd::ZScore
            | Cmd::ZCard
            | Cmd::ZRem
            | Cmd::ZRevRange
            | Cmd::ZRangeByScore
            | Cmd::ZRevRangeByScore
            | Cmd::ZRangeByLex
            | Cmd::ZRevRangeByLex
            | Cmd::ZRangeStore
            | Cmd::ZCount
            | Cmd::ZLexCount
            | Cmd::ZRemRangeByRank
            | Cmd::ZRemRangeByScore
            | Cmd::ZRemRangeByLex
            | Cmd::ZMScore
            | Cmd::ZUnion
            | Cmd::ZInter
            | Cmd::ZDiff
            | Cmd::ZUnionStore
            | Cmd::ZInterStore
            | Cmd::ZDiffStore
            | Cmd::ZInterCard
            | Cmd::ZMPop
            | Cmd::ZRandMember
            | Cmd::ZScan => self.zset_command(db, cmd, c, now, r),
            Cmd::XAdd | Cmd::XLen | Cmd::XRange | Cmd::XRevRange => {
                self.stream_command(db, cmd, c, now, r)
            }
            Cmd::HSet
            | Cmd::HMSet
            | Cmd::HSetNx
            | Cmd::HGet
            | Cmd::HMGet
            | Cmd::HGetAll
            | Cmd::HKeys
            | Cmd::HVals
            | Cmd::HDel
            | Cmd::HExists
            | Cmd::HLen
            | Cmd::HStrLen
            | Cmd::HIncrBy
            | Cmd::HIncrByFloat
            | Cmd::HRandField
            | Cmd::HScan => self.hash_command(db, cmd, c, now, r),
        }
    }
}
