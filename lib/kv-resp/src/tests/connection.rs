//! The parser and the output contract through [`Connection`]: fragmentation, pipelining,
//! output pressure, protocol errors.

use super::*;

/// A pipeline mixing array and inline requests, with replies of every kind.
const PIPELINE: &[u8] = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n\
PING\r\n\
*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n\
*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$0\r\n\r\n\
incr n\n\
*0\r\n\
*3\r\n$5\r\nHMGET\r\n$1\r\nh\r\n$1\r\nf\r\n\
*1\r\n$7\r\nunknown\r\n\
  hgetall   h  \r\n\
*2\r\n$3\r\nDEL\r\n$3\r\nkey\r\n";

const REPLIES: &[u8] = b"+OK\r\n+PONG\r\n$5\r\nva\r\nl\r\n:1\r\n:1\r\n*1\r\n$0\r\n\r\n\
-ERR unknown command 'unknown', with args beginning with: \r\n\
*2\r\n$1\r\nf\r\n$0\r\n\r\n:1\r\n";

fn fresh() -> (Store<'static>, Connection<'static>) {
    let input = Box::leak(vec![0u8; 256].into_boxed_slice());
    let output = Box::leak(vec![0u8; 512].into_boxed_slice());
    (store(4096, 64), Connection::new(input, output).unwrap())
}

#[test]
fn pipeline_in_one_buffer() {
    let (mut st, mut conn) = fresh();
    let (out, closed) = drive(&mut st, &mut conn, &[PIPELINE], usize::MAX);
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(REPLIES)
    );
    assert!(!closed);
}

#[test]
fn every_split_point_gives_the_same_replies() {
    for cut in 0..=PIPELINE.len() {
        let (mut st, mut conn) = fresh();
        let (a, b) = PIPELINE.split_at(cut);
        let (out, _) = drive(&mut st, &mut conn, &[a, b], usize::MAX);
        assert_eq!(out, REPLIES, "split at {cut}");
    }
    for cut1 in (0..=PIPELINE.len()).step_by(7) {
        for cut2 in cut1..=PIPELINE.len() {
            let (mut st, mut conn) = fresh();
            let frags = [&PIPELINE[..cut1], &PIPELINE[cut1..cut2], &PIPELINE[cut2..]];
            let (out, _) = drive(&mut st, &mut conn, &frags, usize::MAX);
            assert_eq!(out, REPLIES, "split at {cut1} and {cut2}");
        }
    }
}

#[test]
fn byte_at_a_time_with_a_slow_reader() {
    let (mut st, mut conn) = fresh();
    let frags: Vec<&[u8]> = PIPELINE.chunks(1).collect();
    for drain in [1, 3, 1000] {
        let (out, _) = drive(&mut st, &mut conn, &frags, drain);
        st.clear_all();
        assert_eq!(out, REPLIES, "drain {drain}");
    }
}

#[test]
fn output_pressure_loses_nothing() {
    // 384-byte output, 300-byte values: each GET reply fills most of it.
    let mut st = store(1 << 14, 64);
    let input = Box::leak(vec![0u8; 4096].into_boxed_slice());
    let output = Box::leak(vec![0u8; crate::MIN_OUTPUT].into_boxed_slice());
    let mut conn = Connection::new(input, output).unwrap();
    let v = "x".repeat(300);
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..5 {
        req.extend(encode(&[b"SET", format!("k{i}").as_bytes(), v.as_bytes()]));
        want.extend_from_slice(b"+OK\r\n");
    }
    for i in 0..5 {
        req.extend(encode(&[b"GET", format!("k{i}").as_bytes()]));
        want.extend_from_slice(format!("$300\r\n{v}\r\n").as_bytes());
        req.extend(encode(&[b"INCR", b"n"]));
        want.extend_from_slice(format!(":{}\r\n", i + 1).as_bytes());
    }
    conn.receive(&req);
    assert_eq!(conn.process(&mut st, 0), Progress::NeedOutput);
    let (out, _) = drive(&mut st, &mut conn, &[], 7);
    // The first replies were in the buffer before `drive` started draining.
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&want)
    );
    assert_eq!(st.key_count(0), 6, "INCR ran exactly 5 times, SET 5 times");
}

#[test]
fn reply_larger_than_output_buffer_is_an_error_not_a_deadlock() {
    let mut st = store(1 << 14, 64);
    let input = Box::leak(vec![0u8; 4096].into_boxed_slice());
    let output = Box::leak(vec![0u8; crate::MIN_OUTPUT].into_boxed_slice());
    let mut conn = Connection::new(input, output).unwrap();
    let v = "x".repeat(1000);
    let mut req = encode(&[b"SET", b"big", v.as_bytes()]);
    req.extend(encode(&[b"SET", b"big", b"new", b"GET"]));
    req.extend(encode(&[b"GET", b"big"]));
    req.extend_from_slice(b"PING\r\n");
    let (out, _) = drive(&mut st, &mut conn, &[&req], 1000);
    let err = "-ERR reply exceeds the connection's output buffer\r\n";
    assert_eq!(
        String::from_utf8_lossy(&out),
        format!("+OK\r\n{err}{err}+PONG\r\n"),
        "SET ... GET whose reply cannot fit changes nothing"
    );
}

#[test]
fn quit_closes_after_its_reply() {
    let (mut st, mut conn) = fresh();
    let (out, closed) = drive(
        &mut st,
        &mut conn,
        &[b"PING\r\nQUIT\r\nPING\r\n"],
        usize::MAX,
    );
    assert_eq!(out, b"+PONG\r\n+OK\r\n");
    assert!(closed);
    assert!(conn.is_closing());
}

#[test]
fn protocol_errors_reply_then_close() {
    let cases: &[(&[u8], &str)] = &[
        (b"*x\r\n", "invalid multibulk length"),
        (b"*1\r\n$-1\r\n", "invalid bulk length"),
        (b"*1\r\n$-2\r\n", "invalid bulk length"),
        (b"*1\r\n$99999\r\n", "invalid bulk length"),
        (b"*1\r\n+PING\r\n", "expected '$', got '+'"),
        (b"*1\r\n$4\r\nPINGAB", "expected CRLF after bulk data"),
        (b"*100000\r\n", "invalid multibulk length"),
    ];
    for (input, msg) in cases {
        let (mut st, mut conn) = fresh();
        let mut bytes = b"PING\r\n".to_vec();
        bytes.extend_from_slice(input);
        let (out, closed) = drive(&mut st, &mut conn, &[&bytes], usize::MAX);
        let want = format!("+PONG\r\n-ERR Protocol error: {msg}\r\n");
        assert_eq!(String::from_utf8_lossy(&out), want);
        assert!(closed, "{msg}");
    }
    // Larger than the 256-byte input buffer, announced or not.
    let (mut st, mut conn) = fresh();
    let big = encode(&[b"SET", b"k", &[b'v'; 200], b"x", &[b'y'; 100]]);
    let (out, closed) = drive(&mut st, &mut conn, &[&big], usize::MAX);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "-ERR Protocol error: request larger than the connection's input buffer\r\n"
    );
    assert!(closed);
    let (mut st, mut conn) = fresh();
    let (out, closed) = drive(&mut st, &mut conn, &[&[b'a'; 300]], usize::MAX);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "-ERR Protocol error: too big inline request\r\n"
    );
    assert!(closed);
}

#[test]
fn tiny_buffers_are_refused() {
    let mut a = [0u8; 8];
    let mut b = [0u8; 1024];
    assert!(Connection::new(&mut a, &mut b).is_none());
    let mut a = [0u8; 64];
    let mut b = [0u8; 100];
    assert!(Connection::new(&mut a, &mut b).is_none());
}

#[test]
fn session_select_is_per_connection() {
    let mut st = store(4096, 64);
    let (mut i1, mut o1, mut i2, mut o2) = ([0u8; 256], [0u8; 512], [0u8; 256], [0u8; 512]);
    let mut c1 = Connection::new(&mut i1, &mut o1).unwrap();
    let mut c2 = Connection::new(&mut i2, &mut o2).unwrap();
    let (out, _) = drive(
        &mut st,
        &mut c1,
        &[b"SELECT 1\r\nSET k one\r\n"],
        usize::MAX,
    );
    assert_eq!(out, b"+OK\r\n+OK\r\n");
    assert_eq!(c1.session().db(), 1);
    let (out, _) = drive(
        &mut st,
        &mut c2,
        &[b"GET k\r\nSELECT 1\r\nGET k\r\n"],
        usize::MAX,
    );
    assert_eq!(out, b"$-1\r\n+OK\r\n$3\r\none\r\n");
}
