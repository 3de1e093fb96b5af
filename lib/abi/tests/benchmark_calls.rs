//! Decoding and encoding of the benchmark calls (`Null`, `KernelBusy`, `KernelCounters`).

use abi::syscall::{counters, nr, BUSY_MAX_CYCLES};
use abi::{Error, Syscall};

#[test]
fn benchmark_calls_round_trip() {
    let calls = [
        Syscall::Null,
        Syscall::KernelBusy { cycles: 0 },
        Syscall::KernelBusy { cycles: 1234 },
        Syscall::KernelBusy {
            cycles: BUSY_MAX_CYCLES,
        },
        Syscall::KernelCounters {
            op: counters::ZERO,
            core: 0,
        },
        Syscall::KernelCounters {
            op: counters::READ,
            core: 0,
        },
        Syscall::KernelCounters {
            op: counters::READ,
            core: abi::limits::MAX_CPUS - 1,
        },
    ];
    for c in calls {
        assert_eq!(Syscall::decode(&c.encode()), Ok(c), "{c:?}");
        assert!(!c.is_management(), "{c:?} runs on the shared side");
    }
    assert_eq!(Syscall::Null.encode(), [nr::NULL, 0, 0, 0, 0, 0]);
    assert_eq!(
        Syscall::KernelBusy { cycles: 7 }.encode(),
        [nr::KERNEL_BUSY, 7, 0, 0, 0, 0]
    );
    assert_eq!(
        Syscall::KernelCounters { op: 1, core: 3 }.encode(),
        [nr::KERNEL_COUNTERS, 1, 3, 0, 0, 0]
    );
}

#[test]
fn benchmark_calls_refuse_bad_arguments() {
    let cases = [
        // Null takes no argument.
        ([nr::NULL, 1, 0, 0, 0, 0], Error::InvalidArgument),
        ([nr::NULL, 0, 0, 0, 0, 1], Error::InvalidArgument),
        // KernelBusy: above the bound, garbage in unused words.
        (
            [nr::KERNEL_BUSY, BUSY_MAX_CYCLES + 1, 0, 0, 0, 0],
            Error::InvalidArgument,
        ),
        (
            [nr::KERNEL_BUSY, usize::MAX, 0, 0, 0, 0],
            Error::InvalidArgument,
        ),
        ([nr::KERNEL_BUSY, 5, 1, 0, 0, 0], Error::InvalidArgument),
        // KernelCounters: unknown operation, core out of range, a core given to a zero,
        // garbage in unused words.
        (
            [nr::KERNEL_COUNTERS, counters::MAX + 1, 0, 0, 0, 0],
            Error::OutOfRange,
        ),
        (
            [nr::KERNEL_COUNTERS, usize::MAX, 0, 0, 0, 0],
            Error::OutOfRange,
        ),
        (
            [
                nr::KERNEL_COUNTERS,
                counters::READ,
                abi::limits::MAX_CPUS,
                0,
                0,
                0,
            ],
            Error::InvalidCore,
        ),
        (
            [nr::KERNEL_COUNTERS, counters::ZERO, 1, 0, 0, 0],
            Error::InvalidArgument,
        ),
        (
            [nr::KERNEL_COUNTERS, counters::READ, 0, 0, 0, 9],
            Error::InvalidArgument,
        ),
    ];
    for (raw, e) in cases {
        assert_eq!(Syscall::decode(&raw), Err(e), "{raw:?}");
    }
}
