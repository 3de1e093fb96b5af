//! The ARMv7 device-tree command-line reader (`hal_armv7::bootargs::bootargs_in`, what the
//! kernel reads from the tree U-Boot or QEMU leaves): arbitrary bytes as a flattened device
//! tree, through the `fdt` crate. Checks that reading never panics, that the copy fits the
//! buffer, and that a short buffer gets a prefix of what a long one gets, cut at a character
//! boundary.
//!
//! Input: a byte giving the buffer's size (0..=255), then the tree.
#![no_main]

use hal_armv7::bootargs::bootargs_in;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&size, blob)) = data.split_first() else {
        return;
    };
    let mut short = vec![0u8; usize::from(size)];
    let mut long = vec![0u8; 4096];
    let whole = bootargs_in(blob, &mut long).map(str::to_owned);
    let cut = bootargs_in(blob, &mut short);
    match (&whole, cut) {
        (Some(whole), Some(cut)) => {
            assert!(cut.len() <= usize::from(size));
            assert!(
                whole.starts_with(cut),
                "{cut:?} is not a prefix of {whole:?}"
            );
            assert!(cut.len() == whole.len() || cut.len() + 4 > usize::from(size));
        }
        (None, None) => {}
        (whole, cut) => panic!("the buffer's size changed the answer: {whole:?} and {cut:?}"),
    }
});
