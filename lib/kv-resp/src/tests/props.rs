//! Property tests: no input panics; the store against a `HashMap` model (replies, memory
//! accounting, OOM atomicity); no leak after FLUSHALL.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::string::{String, ToString};

const HDR: usize = 8;

#[derive(Debug, Clone)]
enum Op {
    Set(u8, String),
    Get(u8),
    Del(u8),
    Incr(u8),
    HSet(u8, u8, String),
    HGet(u8, u8),
    HDel(u8, u8),
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1000i64..1000).prop_map(|n| n.to_string()),
        Just(i64::MAX.to_string()),
        Just((i64::MAX - 1).to_string()),
        Just("-0".to_string()),
        Just("007".to_string()),
        (0usize..60).prop_map(|n| "x".repeat(n)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..6;
    let f = 0u8..4;
    prop_oneof![
        3 => (k.clone(), value()).prop_map(|(k, v)| Op::Set(k, v)),
        2 => k.clone().prop_map(Op::Get),
        1 => k.clone().prop_map(Op::Del),
        2 => k.clone().prop_map(Op::Incr),
        3 => (k.clone(), f.clone(), value()).prop_map(|(k, f, v)| Op::HSet(k, f, v)),
        2 => (k.clone(), f.clone()).prop_map(|(k, f)| Op::HGet(k, f)),
        1 => (k, f).prop_map(|(k, f)| Op::HDel(k, f)),
    ]
}

#[derive(Debug, Clone)]
enum Val {
    Str(String),
    Hash(Vec<(String, String)>),
}

/// The reference: Redis semantics over a `HashMap`, with the crate's exact memory accounting.
struct Model {
    map: HashMap<String, Val>,
    cap: usize,
    slots: usize,
}

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

fn strict_int(s: &str) -> Option<i64> {
    s.parse::<i64>().ok().filter(|n| n.to_string() == s)
}

impl Model {
    fn footprint(k: &str, v: &Val) -> (usize, usize) {
        match v {
            Val::Str(s) => (HDR + k.len() + s.len(), 1),
            Val::Hash(fs) => fs.iter().fold((HDR + k.len(), 1), |(b, n), (f, v)| {
                (b + HDR + f.len() + v.len(), n + 1)
            }),
        }
    }
    fn used(&self) -> (usize, usize) {
        self.map.iter().fold((0, 0), |(b, n), (k, v)| {
            let (fb, fn_) = Self::footprint(k, v);
            (b + fb, n + fn_)
        })
    }
    /// Whether replacing `freed` by `taken` (bytes, slots) fits.
    fn fits(&self, freed: (usize, usize), taken: (usize, usize)) -> bool {
        let (b, n) = self.used();
        b - freed.0 + taken.0 <= self.cap && n - freed.1 + taken.1 <= self.slots
    }
    fn set_str(&mut self, k: &str, v: String) -> bool {
        let freed = self
            .map
            .get(k)
            .map_or((0, 0), |old| Self::footprint(k, old));
        if !self.fits(freed, (HDR + k.len() + v.len(), 1)) {
            return false;
        }
        self.map.insert(k.to_string(), Val::Str(v));
        true
    }

    fn apply(&mut self, op: &Op) -> (Vec<String>, String) {
        let key = |k: &u8| format!("k{k}");
        let field = |f: &u8| format!("f{f}");
        match op {
            Op::Set(k, v) => {
                let k = key(k);
                let r = if self.set_str(&k, v.clone()) {
                    "+OK\r\n".into()
                } else {
                    OOM.into()
                };
                (vec!["SET".into(), k, v.clone()], r)
            }
            Op::Get(k) => {
                let k = key(k);
                let r = match self.map.get(&k) {
                    None => "$-1\r\n".into(),
                    Some(Val::Str(s)) => bulk(s),
                    Some(Val::Hash(_)) => WRONGTYPE.into(),
                };
                (vec!["GET".into(), k], r)
            }
            Op::Del(k) => {
                let k = key(k);
                let r = format!(":{}\r\n", u8::from(self.map.remove(&k).is_some()));
                (vec!["DEL".into(), k], r)
            }
            Op::Incr(k) => {
                let k = key(k);
                let r = match self.map.get(&k) {
                    Some(Val::Hash(_)) => WRONGTYPE.into(),
                    old => {
                        let old = match old {
                            None => Some(0),
                            Some(Val::Str(s)) => strict_int(s),
                            Some(Val::Hash(_)) => unreachable!(),
                        };
                        match old.map(|o| o.checked_add(1)) {
                            None => "-ERR value is not an integer or out of range\r\n".into(),
                            Some(None) => "-ERR increment or decrement would overflow\r\n".into(),
                            Some(Some(n)) => {
                                if self.set_str(&k, n.to_string()) {
                                    format!(":{n}\r\n")
                                } else {
                                    OOM.into()
                                }
                            }
                        }
                    }
                };
                (vec!["INCR".into(), k], r)
            }
            Op::HSet(k, f, v) => {
                let (k, f) = (key(k), field(f));
                let args = vec!["HSET".into(), k.clone(), f.clone(), v.clone()];
                let new_field = HDR + f.len() + v.len();
                let r = match self.map.get(&k) {
                    Some(Val::Str(_)) => WRONGTYPE.into(),
                    None => {
                        if self.fits((0, 0), (HDR + k.len() + new_field, 2)) {
                            self.map.insert(k, Val::Hash(vec![(f, v.clone())]));
                            ":1\r\n".into()
                        } else {
                            OOM.into()
                        }
                    }
                    Some(Val::Hash(fs)) => {
                        let old = fs
                            .iter()
                            .find(|(of, _)| *of == f)
                            .map(|(of, ov)| HDR + of.len() + ov.len());
                        let ok = match old {
                            Some(old) => self.fits((old, 0), (new_field, 0)),
                            None => self.fits((0, 0), (new_field, 1)),
                        };
                        if !ok {
                            OOM.into()
                        } else {
                            let Some(Val::Hash(fs)) = self.map.get_mut(&k) else {
                                unreachable!()
                            };
                            match fs.iter_mut().find(|(of, _)| *of == f) {
                                Some(slot) => {
                                    slot.1 = v.clone();
                                    ":0\r\n".into()
                                }
                                None => {
                                    fs.push((f, v.clone()));
                                    ":1\r\n".into()
                                }
                            }
                        }
                    }
                };
                (args, r)
            }
            Op::HGet(k, f) => {
                let (k, f) = (key(k), field(f));
                let r = match self.map.get(&k) {
                    Some(Val::Str(_)) => WRONGTYPE.into(),
                    None => "$-1\r\n".into(),
                    Some(Val::Hash(fs)) => fs
                        .iter()
                        .find(|(of, _)| *of == f)
                        .map_or("$-1\r\n".into(), |(_, v)| bulk(v)),
                };
                (vec!["HGET".into(), k, f], r)
            }
            Op::HDel(k, f) => {
                let (k, f) = (key(k), field(f));
                let r = match self.map.get_mut(&k) {
                    Some(Val::Str(_)) => WRONGTYPE.into(),
                    None => ":0\r\n".into(),
                    Some(Val::Hash(fs)) => {
                        let before = fs.len();
                        fs.retain(|(of, _)| *of != f);
                        let n = before - fs.len();
                        if fs.is_empty() {
                            self.map.remove(&k);
                        }
                        format!(":{n}\r\n")
                    }
                };
                (vec!["HDEL".into(), k, f], r)
            }
        }
    }
}

fn check_against_model(ops: &[Op], cap: usize, slots: usize) -> Result<(), TestCaseError> {
    let mut st = store(cap, slots);
    let mut s = Session::new();
    let mut model = Model {
        map: HashMap::new(),
        cap,
        slots,
    };
    for op in ops {
        let (args, want) = model.apply(op);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = cmd_at(&mut st, &mut s, &args, 0);
        prop_assert_eq!(&got, &want, "{:?}", op);
        prop_assert_eq!(st.used_memory(), model.used().0, "memory after {:?}", op);
        prop_assert_eq!(st.used_slots(), model.used().1, "slots after {:?}", op);
    }
    // Every acknowledged write reads back.
    for (k, v) in &model.map {
        match v {
            Val::Str(s_) => prop_assert_eq!(cmd_at(&mut st, &mut s, &["GET", k], 0), bulk(s_)),
            Val::Hash(fs) => {
                let mut want = format!("*{}\r\n", 2 * fs.len());
                for (f, v) in fs {
                    want += &bulk(f);
                    want += &bulk(v);
                }
                prop_assert_eq!(cmd_at(&mut st, &mut s, &["HGETALL", k], 0), want);
            }
        }
    }
    prop_assert_eq!(
        cmd_at(&mut st, &mut s, &["DBSIZE"], 0),
        format!(":{}\r\n", model.map.len())
    );
    prop_assert_eq!(cmd_at(&mut st, &mut s, &["FLUSHALL"], 0), "+OK\r\n");
    prop_assert_eq!(st.used_memory(), 0);
    prop_assert_eq!(st.used_slots(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Plenty of memory: the replies are Redis's.
    #[test]
    fn matches_hashmap_model(ops in proptest::collection::vec(op(), 1..120)) {
        check_against_model(&ops, 1 << 20, 4096)?;
    }

    /// Little memory and few slots: a refused command changes nothing (the model's state is
    /// compared after every command), OOM happens exactly when the budget is exceeded, and
    /// every acknowledged write reads back at the end.
    #[test]
    fn oom_changes_nothing(
        ops in proptest::collection::vec(op(), 1..200),
        cap in 0usize..400,
        slots in 0usize..12,
    ) {
        check_against_model(&ops, cap, slots)?;
    }

    /// Deleting every key by hand (not FLUSHALL) also frees every byte and slot.
    #[test]
    fn deletes_free_everything(ops in proptest::collection::vec(op(), 1..100)) {
        let mut st = store(1 << 16, 256);
        let mut s = Session::new();
        let mut model = Model { map: HashMap::new(), cap: 1 << 16, slots: 256 };
        for op in &ops {
            let (args, _) = model.apply(op);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cmd_at(&mut st, &mut s, &args, 0);
        }
        for k in 0..6 {
            cmd_at(&mut st, &mut s, &["DEL", &format!("k{k}")], 0);
        }
        prop_assert_eq!(st.used_memory(), 0);
        prop_assert_eq!(st.used_slots(), 0);
    }

    /// Arbitrary bytes in arbitrary fragments, with small buffers, never panic, and the
    /// connection either waits for input or closes after a protocol error.
    #[test]
    fn random_bytes_never_panic(
        frags in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        drain in 1usize..500,
    ) {
        let mut st = store(2048, 32);
        let input = Box::leak(vec![0u8; 64].into_boxed_slice());
        let output = Box::leak(vec![0u8; crate::MIN_OUTPUT].into_boxed_slice());
        let mut conn = Connection::new(input, output).unwrap();
        let frags: Vec<&[u8]> = frags.iter().map(Vec::as_slice).collect();
        drive(&mut st, &mut conn, &frags, drain);
        st.check();
    }

    /// Random sequences of RESP-looking tokens reach deeper into the parser and the commands.
    #[test]
    fn random_resp_tokens_never_panic(
        toks in proptest::collection::vec(prop_oneof![
            Just("*"), Just("$"), Just("\r\n"), Just("\n"), Just("\r"), Just("-1"), Just("0"),
            Just("1"), Just("2"), Just("3"), Just("4"), Just("-"), Just("99999999999999999999"),
            Just(" "), Just("SET"), Just("GET"), Just("HSET"), Just("INCR"), Just("MSET"),
            Just("EX"), Just("PX"), Just("NX"), Just("XX"), Just("GET"), Just("DEL"),
            Just("HGETALL"), Just("SELECT"), Just("FLUSHALL"), Just("INFO"), Just("k"), Just("f"),
            Just("CONFIG"), Just("PING"), Just("EXPIRE"), Just("DECRBY"), Just("HDEL"),
        ], 0..80),
        split in 0usize..400,
    ) {
        let bytes: Vec<u8> = toks.concat().into_bytes();
        let split = split.min(bytes.len());
        let mut st = store(1024, 16);
        let input = Box::leak(vec![0u8; 128].into_boxed_slice());
        let output = Box::leak(vec![0u8; crate::MIN_OUTPUT].into_boxed_slice());
        let mut conn = Connection::new(input, output).unwrap();
        drive(&mut st, &mut conn, &[&bytes[..split], &bytes[split..]], 100);
        st.check();
    }
}
