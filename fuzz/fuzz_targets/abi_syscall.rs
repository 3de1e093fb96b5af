//! The system-call decoder of `abi`: arbitrary register values through `Syscall::decode`.
//! Checks that decoding never panics, that every decoded call encodes back to exactly the
//! registers it came from and decodes again to itself (every well-formed call round-trips),
//! and that the IPC fastpath's `decode_ipc` agrees with `decode`.
//!
//! Input: the six registers, 8 bytes each (little-endian, missing bytes zero), or, when the
//! input is at most 6 bytes long, one byte each (small values reach the numbered calls and
//! the in-range arguments without the fuzzer having to find eight-byte words).
#![no_main]

use abi::syscall::{Regs, Syscall};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut regs: Regs = [0; 6];
    if data.len() <= regs.len() {
        for (r, &b) in regs.iter_mut().zip(data) {
            *r = usize::from(b);
        }
    } else {
        for (r, chunk) in regs.iter_mut().zip(data.chunks(8)) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            *r = u64::from_le_bytes(word) as usize;
        }
    }
    let decoded = Syscall::decode(&regs);
    if let Ok(call) = decoded {
        let encoded = call.encode();
        assert_eq!(encoded, regs, "{call:?} encodes to other registers");
        assert_eq!(
            Syscall::decode(&encoded),
            Ok(call),
            "{call:?} does not round-trip"
        );
    }
    match Syscall::decode_ipc(&regs) {
        Some((ipc, ep, msg)) => assert_eq!(decoded, Ok(ipc.syscall(ep, msg))),
        None => assert!(
            !matches!(
                decoded,
                Ok(Syscall::Call { .. } | Syscall::ReplyRecv { .. })
            ),
            "decode_ipc refuses {decoded:?}"
        ),
    }
});
