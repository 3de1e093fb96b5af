//! `Syscall::decode_ipc`, the kernel's fast decoding of `Call` and `ReplyRecv`, agrees with
//! `Syscall::decode` on every input: the fastpath then sees exactly the calls the full path
//! would.

use abi::syscall::{nr, Regs};
use abi::Syscall;
use proptest::prelude::*;

fn agrees(raw: &Regs) {
    let full = Syscall::decode(raw);
    match Syscall::decode_ipc(raw) {
        Some((call, ep, msg)) => assert_eq!(full, Ok(call.syscall(ep, msg)), "{raw:?}"),
        None => assert!(
            !matches!(
                full,
                Ok(Syscall::Call { .. }) | Ok(Syscall::ReplyRecv { .. })
            ),
            "decode_ipc missed {full:?} for {raw:?}"
        ),
    }
}

#[test]
fn edges_agree() {
    let slots = [
        0,
        1,
        abi::limits::CSPACE_SLOTS - 1,
        abi::limits::CSPACE_SLOTS,
        usize::MAX,
    ];
    for n in 0..=nr::REPLY_RECV + 2 {
        for &s in &slots {
            agrees(&[n, s, 1, 2, 3, usize::MAX]);
            agrees(&[n, s, 0, 0, 0, 0]);
        }
    }
    assert!(Syscall::decode_ipc(&[nr::CALL, 3, 0, 0, 0, 0]).is_some());
    assert!(Syscall::decode_ipc(&[nr::REPLY_RECV, 3, 9, 0, 0, 7]).is_some());
}

proptest! {
    #[test]
    fn random_registers_agree(n in 0usize..16, slot in 0usize..600, rest in any::<[usize; 4]>()) {
        agrees(&[n, slot, rest[0], rest[1], rest[2], rest[3]]);
    }
}
