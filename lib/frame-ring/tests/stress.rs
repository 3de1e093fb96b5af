//! Real threads: a producer and a consumer pass a million numbered frames of varying length
//! through a small ring, the consumer sleeping (a real block, on a condition variable standing
//! in for the kernel's notification) whenever the ring is empty and the doorbell waking it.
//! Every frame must arrive once, whole and in order, and the run must not hang.
#![cfg(not(frame_ring_loom))]

use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use frame_ring::{Doorbell, FrameRing};

/// A notification: `signal` sets the word, `wait` blocks until it is set and clears it.
#[derive(Default)]
struct Notification {
    word: Mutex<bool>,
    cv: Condvar,
}

impl Notification {
    fn signal(&self) {
        *self.word.lock().unwrap() = true;
        self.cv.notify_one();
    }

    fn wait(&self) {
        let mut w = self.word.lock().unwrap();
        while !*w {
            let (g, timeout) = self.cv.wait_timeout(w, Duration::from_secs(20)).unwrap();
            assert!(
                !timeout.timed_out(),
                "lost wake-up: the consumer slept for 20 s"
            );
            w = g;
        }
        *w = false;
    }
}

#[test]
fn a_million_frames_with_sleeps_arrive_once_in_order() {
    const FRAMES: u32 = 1_000_000;
    let ring = Arc::new(FrameRing::<8, 64>::new());
    let bell = Arc::new(Doorbell::new());
    let note = Arc::new(Notification::default());
    let (r, b, n) = (ring.clone(), bell.clone(), note.clone());
    let producer = thread::spawn(move || {
        // SAFETY: the only producer.
        let mut p = unsafe { r.producer() };
        let mut wakes = 0u32;
        for i in 0..FRAMES {
            let len = 4 + (i as usize % 60);
            while p
                .push(|s| {
                    s[..4].copy_from_slice(&i.to_le_bytes());
                    s[4..len].fill(i as u8);
                    (len, ())
                })
                .is_none()
            {
                std::hint::spin_loop();
            }
            if b.needs_wake() {
                n.signal();
                wakes += 1;
            }
        }
        wakes
    });
    // SAFETY: the only consumer.
    let mut c = unsafe { ring.consumer() };
    let (mut next, mut sleeps) = (0u32, 0u32);
    while next < FRAMES {
        let got = c.pop(|f| {
            let i = u32::from_le_bytes(f[..4].try_into().unwrap());
            assert_eq!(i, next, "frame out of order");
            assert_eq!(f.len(), 4 + (i as usize % 60));
            assert!(f[4..].iter().all(|&x| x == i as u8), "frame {i} torn");
        });
        if got.is_some() {
            next += 1;
            continue;
        }
        bell.prepare_sleep();
        if c.is_empty() {
            sleeps += 1;
            note.wait();
        }
        bell.awake();
    }
    let wakes = producer.join().unwrap();
    assert!(c.is_empty());
    // Each sleep needed a wake-up (a wake-up can also find the consumer already awake).
    assert!(wakes >= sleeps, "{wakes} wake-ups for {sleeps} sleeps");
}
