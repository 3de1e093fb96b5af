//! Loom models of the ring and the doorbell: `RUSTFLAGS="--cfg frame_ring_loom" cargo test -p
//! frame-ring --release --test loom_ring` (the `loom` step of `cargo xtask test`). Loom
//! explores every interleaving and every reordering the C++ memory model allows (more than
//! ARMv7 does), and its cells report a slot read while it is written.
#![cfg(frame_ring_loom)]

use frame_ring::{Doorbell, FrameRing};
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Three frames through a two-slot ring: every frame arrives whole and in order, and the slot
/// reused for the third is never read while it is rewritten.
#[test]
fn frames_pass_whole_and_in_order() {
    loom::model(|| {
        let ring = Arc::new(FrameRing::<2, 4>::new());
        let r = ring.clone();
        let producer = thread::spawn(move || {
            // SAFETY: the only producer.
            let mut p = unsafe { r.producer() };
            for i in 1..=3u8 {
                while p
                    .push(|s| {
                        *s = [i, i, i, i];
                        (usize::from(i), ())
                    })
                    .is_none()
                {
                    thread::yield_now();
                }
            }
        });
        // SAFETY: the only consumer.
        let mut c = unsafe { ring.consumer() };
        let mut next = 1u8;
        while next <= 3 {
            match c.pop(|f| f.to_vec()) {
                Some(f) => {
                    assert_eq!(f, vec![next; usize::from(next)]);
                    next += 1;
                }
                None => thread::yield_now(),
            }
        }
        producer.join().unwrap();
    });
}

/// The doorbell never loses a wake-up: if the consumer decides to sleep (its ring looked empty
/// after `prepare_sleep`), the producer, which published a frame, saw it asleep and woke it.
#[test]
fn a_sleeping_consumer_is_always_woken() {
    loom::model(|| {
        let ring = Arc::new(FrameRing::<2, 4>::new());
        let bell = Arc::new(Doorbell::new());
        let woken = Arc::new(AtomicBool::new(false));
        let (r, b, w) = (ring.clone(), bell.clone(), woken.clone());
        let producer = thread::spawn(move || {
            // SAFETY: the only producer.
            let mut p = unsafe { r.producer() };
            p.push(|s| {
                s[0] = 1;
                (1, ())
            });
            if b.needs_wake() {
                // The kernel call (a notification's Signal).
                w.store(true, Ordering::Relaxed);
            }
        });
        // SAFETY: the only consumer.
        let mut c = unsafe { ring.consumer() };
        bell.prepare_sleep();
        let sleeps = c.is_empty();
        if !sleeps {
            bell.awake();
        }
        producer.join().unwrap();
        if sleeps {
            assert!(
                woken.load(Ordering::Relaxed),
                "the consumer slept on an empty ring and the producer did not wake it"
            );
        }
    });
}
