//! The RESP parser and command execution of `kv-resp`: arbitrary bytes, split at arbitrary
//! points, into a [`Connection`] over a small [`Store`], with the output drained in arbitrary
//! amounts. Checks that nothing panics, that everything the connection writes is a sequence of
//! well-formed RESP2 replies, and that the store's memory and slot accounting stay within its
//! arena and slot table.
//!
//! Input: 16 bytes of choices (buffer sizes, chunk lengths, drain amounts, clock steps), then
//! the bytes the client sends.
#![no_main]

use kv_resp::{Connection, Progress, Slot, Store, MIN_INPUT, MIN_OUTPUT};
use libfuzzer_sys::fuzz_target;
use locked_in_fuzz::{check_replies, split_prefix, Choices};

/// Rounds of receive/process/drain before the run is cut off (each feeds or drains a byte at
/// least, so this only bounds pathological choice strings).
const MAX_ROUNDS: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let (prefix, mut payload) = split_prefix(data, 16);
    let mut choices = Choices::new(prefix);
    let mut arena = vec![0u8; choices.in_range(0, 64) * 64];
    let mut slots = vec![Slot::EMPTY; choices.in_range(0, 64)];
    let mut store = Store::new(&mut arena, &mut slots);
    let mut input = vec![0u8; choices.in_range(MIN_INPUT, 512)];
    let mut output = vec![0u8; choices.in_range(MIN_OUTPUT, 1024)];
    let mut conn = Connection::new(&mut input, &mut output).expect("buffers of the minimum sizes");
    // The rest of the prefix drives chunk lengths, drain amounts and the clock, cyclically.
    let steps: Vec<u8> = (0..8).map(|_| choices.byte()).collect();
    let mut step = 0;
    let mut next = || {
        step += 1;
        steps[step % steps.len()]
    };
    let mut sent = Vec::new();
    let mut now_ms = 0u64;
    for _ in 0..MAX_ROUNDS {
        let chunk = usize::from(next()).max(1).min(payload.len());
        let taken = conn.receive(&payload[..chunk]);
        payload = &payload[taken..];
        now_ms += u64::from(next()) * 37;
        let before = conn.output().len();
        let progress = conn.process(&mut store, now_ms);
        // A full input buffer (nothing taken) must hold a command, which always replies, or be
        // answered with a protocol error: never wait for input that cannot be buffered.
        let replied = conn.output().len() > before;
        if taken == 0 && !replied && progress == Progress::NeedInput && !payload.is_empty() {
            panic!("a full input buffer holds no command and gets no error");
        }
        assert!(
            store.used_memory() <= store.max_memory(),
            "memory over the arena"
        );
        assert!(
            store.used_slots() <= store.max_slots(),
            "slots over the table"
        );
        // Drain some of the output (all of it when the connection waits for output space, so
        // that a reply that fits only in an empty buffer gets there).
        let pending = conn.output().len();
        let n = if progress == Progress::NeedOutput || payload.is_empty() {
            pending
        } else {
            usize::from(next()) % (pending + 1)
        };
        sent.extend_from_slice(&conn.output()[..n]);
        conn.consume_output(n);
        let done =
            progress == Progress::Close || (payload.is_empty() && progress == Progress::NeedInput);
        if done && conn.output().is_empty() {
            break;
        }
    }
    sent.extend_from_slice(conn.output());
    if let Err(e) = check_replies(&sent) {
        panic!(
            "malformed RESP output ({e:?}): {:?}",
            String::from_utf8_lossy(&sent)
        );
    }
});
