//! The kernel lock-trace decoder (`trace_format::Trace::from_bytes`) and the analysis the
//! simulator runs on a decoded trace (`sim::analysis::analyse`). Checks that decoding and
//! analysing never panic, that a decoded trace encodes back to the bytes it came from, and
//! that it decodes again to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trace_format::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::from_bytes(data) else {
        return;
    };
    let bytes = trace.to_bytes();
    assert_eq!(
        bytes,
        data[..bytes.len()],
        "the trace encodes to other bytes"
    );
    assert_eq!(Trace::from_bytes(&bytes).as_ref(), Ok(&trace));
    let _ = sim::analysis::analyse(&trace);
});
