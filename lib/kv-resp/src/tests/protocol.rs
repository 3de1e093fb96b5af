//! The request forms as Redis reads them: inline quoting (`sdssplitargs`), empty and negative
//! multibulk counts, and `HELLO`.

use super::*;

/// The words the parser splits an inline line into.
fn words(line: &[u8]) -> Result<Vec<Vec<u8>>, crate::ProtocolError> {
    let mut buf = vec![0u8; line.len().max(64)];
    let mut p = Parser::new(&mut buf);
    assert_eq!(p.receive(line), line.len());
    let c = p.next_command()?.expect("a complete line");
    assert_eq!(c.args().count(), c.argc());
    let words: Vec<Vec<u8>> = c.args().map(|a| a.to_vec()).collect();
    // Asking again (a command retried after its reply did not fit) gives the same words.
    let again: Vec<Vec<u8>> = p
        .next_command()?
        .unwrap()
        .args()
        .map(|a| a.to_vec())
        .collect();
    assert_eq!(words, again);
    Ok(words)
}

fn w(list: &[&[u8]]) -> Vec<Vec<u8>> {
    list.iter().map(|a| a.to_vec()).collect()
}

#[test]
fn inline_double_quotes_unescape() {
    assert_eq!(
        words(b"set \"a b\" \"\\x41\\n\\r\\t\\b\\a\\\\\\\"\\q\\xZZ\"\r\n").unwrap(),
        w(&[b"set", b"a b", b"A\n\r\t\x08\x07\\\"qxZZ"])
    );
    assert_eq!(words(b"echo \"\"\n").unwrap(), w(&[b"echo", b""]));
    // A quoted part may follow an unquoted one within a word.
    assert_eq!(words(b"ab\"c d\"  e\n").unwrap(), w(&[b"abc d", b"e"]));
    // A `\r` inside quotes is kept; the one before `\n` ends the line.
    assert_eq!(words(b"x \"a\rb\"\r\n").unwrap(), w(&[b"x", b"a\rb"]));
}

#[test]
fn inline_single_quotes_unescape_only_the_quote() {
    assert_eq!(
        words(b"set 'it\\'s' '\\n\\x41'\n").unwrap(),
        w(&[b"set", b"it's", b"\\n\\x41"])
    );
}

#[test]
fn inline_long_quoted_word() {
    let mut line = b"set k \"".to_vec();
    line.extend(std::iter::repeat_n(b'v', 1000));
    line.extend_from_slice(b"\"\n");
    let got = words(&line).unwrap();
    assert_eq!(got[2], vec![b'v'; 1000]);
}

#[test]
fn inline_nul_ends_the_words() {
    assert_eq!(words(b"a b\0c d\n").unwrap(), w(&[b"a", b"b"]));
}

#[test]
fn inline_unbalanced_quotes() {
    use crate::ProtocolError::UnbalancedQuotes;
    for line in [
        &b"set \"\"\"test-key\"\"\" test-value\r\n"[..],
        b"set \"abc\n",
        b"set 'abc\n",
        b"set \"a\"b\n",
        b"set 'a'b\n",
        b"set \"a\\\"\n",
    ] {
        assert_eq!(words(line), Err(UnbalancedQuotes), "{line:?}");
    }
}

#[test]
fn unbalanced_quotes_reply_and_close() {
    let mut st = store(4096, 64);
    let (mut i, mut o) = (vec![0u8; 256], vec![0u8; 512]);
    let mut c = Connection::new(&mut i, &mut o).unwrap();
    c.receive(b"set \"\"\"test-key\"\"\" test-value\r\nping\r\n");
    assert_eq!(c.process(&mut st, 0), Progress::Close);
    assert_eq!(
        c.output(),
        b"-ERR Protocol error: unbalanced quotes in request\r\n"
    );
}

#[test]
fn empty_and_negative_multibulk_are_ignored() {
    let mut st = store(4096, 64);
    let mut s = Session::new();
    assert_eq!(
        run(
            &mut st,
            &mut s,
            b"*-10\r\n*0\r\n\r\n*1\r\n$4\r\nPING\r\n",
            0
        ),
        b"+PONG\r\n"
    );
    assert_eq!(
        run(&mut st, &mut s, b"*3000000000\r\n", 0),
        b"-ERR Protocol error: invalid multibulk length\r\n"
    );
}

#[test]
fn hello_answers_for_resp2() {
    let mut st = store(4096, 64);
    let mut s = Session::new();
    let map = b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n\
        $5\r\nproto\r\n:2\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n\
        $4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
    assert_eq!(run(&mut st, &mut s, b"HELLO\r\n", 0), map);
    assert_eq!(run(&mut st, &mut s, b"hello 2\r\n", 0), map);
    for v in ["3", "1", "4"] {
        assert_eq!(
            run(&mut st, &mut s, format!("HELLO {v}\r\n").as_bytes(), 0),
            b"-NOPROTO unsupported protocol version\r\n"
        );
    }
    assert_eq!(
        run(&mut st, &mut s, b"HELLO x\r\n", 0),
        b"-ERR Protocol version is not an integer or out of range\r\n"
    );
}

#[test]
fn lent_buffers_carry_a_large_value_both_ways() {
    let mut st = store(1 << 16, 64);
    let value = vec![b'v'; 5000];
    let (mut big_in, mut big_out) = (vec![0u8; 8192], vec![0u8; 8192]);
    let (mut spare_in, mut spare_out) = (Some(&mut big_in[..]), Some(&mut big_out[..]));
    let (mut i, mut o) = (vec![0u8; 256], vec![0u8; 512]);
    let mut c = Connection::new(&mut i, &mut o).unwrap();
    c.set_lendable(8192);
    let mut input = encode(&[b"SET", b"k", &value]);
    input.extend_from_slice(&encode(&[b"GET", b"k"]));
    input.extend_from_slice(b"PING\r\n");
    let mut fed = 0;
    let mut out = Vec::new();
    let mut lends = 0;
    for _ in 0..1000 {
        fed += c.receive(&input[fed..]);
        let p = c.process(&mut st, 0);
        out.extend_from_slice(c.output());
        let n = c.output().len();
        c.consume_output(n);
        let (li, lo) = c.take_lent();
        spare_in = spare_in.or(li);
        spare_out = spare_out.or(lo);
        if c.wants_input().is_some() {
            lends += 1;
            spare_in = c.lend_input(spare_in.take().unwrap()).err();
        }
        if c.wants_output() {
            lends += 1;
            spare_out = c.lend_output(spare_out.take().unwrap()).err();
        }
        if p == Progress::NeedInput && fed == input.len() && c.wants_input().is_none() {
            break;
        }
    }
    let mut want = b"+OK\r\n$5000\r\n".to_vec();
    want.extend_from_slice(&value);
    want.extend_from_slice(b"\r\n+PONG\r\n");
    assert_eq!(out, want);
    assert_eq!(lends, 2);
    // Both buffers came back.
    assert!(spare_in.is_some() && spare_out.is_some());
}

#[test]
fn lent_input_is_asked_for_up_to_the_lendable_size() {
    let mut st = store(1 << 16, 64);
    let (mut i, mut o) = (vec![0u8; 256], vec![0u8; 512]);
    let mut c = Connection::new(&mut i, &mut o).unwrap();
    c.set_lendable(1024);
    c.receive(&encode(&[b"SET", b"k", &[b'v'; 800]]));
    assert_eq!(c.process(&mut st, 0), Progress::NeedInput);
    assert_eq!(c.wants_input(), Some(828));
    let (mut i2, mut o2) = (vec![0u8; 256], vec![0u8; 512]);
    let mut c2 = Connection::new(&mut i2, &mut o2).unwrap();
    c2.set_lendable(1024);
    c2.receive(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n");
    assert_eq!(c2.process(&mut st, 0), Progress::Close);
    assert_eq!(c2.output(), b"-ERR Protocol error: invalid bulk length\r\n");
}

#[test]
fn proto_max_bulk_len_is_the_arena_size() {
    let mut st = store(4096, 64);
    let mut s = Session::new();
    assert_eq!(
        cmd_at(&mut st, &mut s, &["CONFIG", "GET", "proto-max-bulk-len"], 0),
        "*2\r\n$18\r\nproto-max-bulk-len\r\n$4\r\n4096\r\n"
    );
    assert_eq!(
        cmd_at(
            &mut st,
            &mut s,
            &["CONFIG", "SET", "proto-max-bulk-len", "4096"],
            0
        ),
        "+OK\r\n"
    );
    assert!(cmd_at(
        &mut st,
        &mut s,
        &["CONFIG", "SET", "proto-max-bulk-len", "10000000000"],
        0
    )
    .starts_with("-ERR"));
}

#[test]
fn a_connection_that_ends_mid_request_gives_its_lent_buffers_back() {
    let mut st = store(1 << 16, 64);
    let mut big_in = vec![0u8; 4096];
    let (mut i, mut o) = (vec![0u8; 256], vec![0u8; 512]);
    let mut c = Connection::new(&mut i, &mut o).unwrap();
    c.set_lendable(4096);
    // Half of a 2,000-byte SET: the connection needs the larger input buffer.
    let request = encode(&[b"SET", b"k", &[b'v'; 2000]]);
    c.receive(&request[..256]);
    assert_eq!(c.process(&mut st, 0), Progress::NeedInput);
    assert!(c.wants_input().is_some());
    assert!(c.lend_input(&mut big_in).is_ok());
    c.receive(&request[256..1000]);
    assert_eq!(c.process(&mut st, 0), Progress::NeedInput);
    // Still mid-request: `take_lent` keeps the buffer, ending the connection returns it.
    assert!(c.take_lent().0.is_none());
    let (input, output) = c.into_lent();
    assert_eq!(input.map(|b| b.len()), Some(4096));
    assert!(output.is_none());
    // Nothing was stored: the SET never completed.
    assert_eq!(st.used_slots(), 0);
    // A connection that was never lent anything gives nothing back.
    let (mut i2, mut o2) = (vec![0u8; 256], vec![0u8; 512]);
    let c2 = Connection::new(&mut i2, &mut o2).unwrap();
    assert_eq!(c2.into_lent(), (None, None));
}
