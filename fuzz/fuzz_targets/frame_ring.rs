//! The single-producer single-consumer frame ring (`frame_ring::FrameRing`), driven from one
//! thread by a sequence of pushes and pops, against a model queue. Checks that every frame
//! comes out once, in order, with its bytes (cut to the slot size when longer), and that the
//! producer's free count and the consumer's length match the model.
//!
//! Input: one operation per byte: odd bytes push a frame of `byte / 2` bytes (0..=127, so some
//! are longer than the 64-byte slots), even bytes pop one.
#![no_main]

use std::collections::VecDeque;

use frame_ring::FrameRing;
use libfuzzer_sys::fuzz_target;

/// Slots in the ring.
const N: usize = 4;
/// Bytes per slot.
const SIZE: usize = 64;

fuzz_target!(|data: &[u8]| {
    let ring = Box::new(FrameRing::<N, SIZE>::new());
    // SAFETY: this is the ring's only producer and only consumer, both used on this thread.
    let (mut producer, mut consumer) = unsafe { (ring.producer(), ring.consumer()) };
    let mut model: VecDeque<Vec<u8>> = VecDeque::new();
    for (i, &op) in data.iter().enumerate() {
        if op % 2 == 1 {
            let len = usize::from(op / 2);
            let frame: Vec<u8> = (0..len).map(|j| (i + j) as u8).collect();
            let pushed = producer.push(|slot| {
                let n = len.min(SIZE);
                slot[..n].copy_from_slice(&frame[..n]);
                (len, ())
            });
            assert_eq!(
                pushed.is_some(),
                model.len() < N,
                "push with {} queued",
                model.len()
            );
            if pushed.is_some() {
                model.push_back(frame[..len.min(SIZE)].to_vec());
            }
        } else {
            let popped = consumer.pop(|bytes| bytes.to_vec());
            assert_eq!(popped, model.pop_front());
        }
        // Both counts are lower bounds: each side reloads the other's counter only when its
        // cached one says full (producer) or empty (consumer).
        assert!(producer.free() <= N - model.len());
        assert!(consumer.len() <= model.len());
        assert_eq!(ring.len(), model.len());
        assert_eq!(producer.is_full(), model.len() == N);
        assert_eq!(consumer.is_empty(), model.is_empty());
    }
});
