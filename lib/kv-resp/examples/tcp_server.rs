//! The store served over TCP on the host, to try the crate with real clients (`redis-cli`,
//! `redis-benchmark`) and to compare its replies with a Redis server's
//! (`tools/compare-with-redis.py`):
//!
//!     cargo run --release -p kv-resp --example tcp_server -- [PORT [ARENA_MIB [SLOTS]]]
//!
//! It listens on 127.0.0.1:PORT (default 6390) with an arena of ARENA_MIB MiB (48) and SLOTS
//! slots (524288), the guest's per-core sizes. One thread per connection; the store is behind a
//! mutex, taken for each batch of requests. Time is the host's clock. A request or reply larger
//! than a connection's 16 KiB buffers gets a larger one lent to it, as large as the arena (the
//! largest value the store can hold): allocated zeroed, so its pages cost memory only once a
//! large request or reply touches them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use kv_resp::{Connection, Progress, Slot, Store};

/// Bytes of each connection's request and reply buffers (the guest's).
const BUF: usize = 16 * 1024;

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .map_or(Ok(default), |a| a.parse::<usize>())
            .unwrap_or_else(|e| {
                eprintln!("tcp_server: argument {i}: {e}");
                std::process::exit(2)
            })
    };
    let (port, mib, slots) = (arg(1, 6390), arg(2, 48), arg(3, 512 * 1024));
    let arena = Box::leak(vec![0u8; mib << 20].into_boxed_slice());
    let table = Box::leak(vec![Slot::EMPTY; slots].into_boxed_slice());
    let store = Arc::new(Mutex::new(Store::new(arena, table)));
    let Ok(port) = u16::try_from(port) else {
        eprintln!("tcp_server: port {port} is out of range");
        std::process::exit(2)
    };
    let listener = match TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("tcp_server: 127.0.0.1:{port}: {e}");
            std::process::exit(1)
        }
    };
    println!("tcp_server: listening on 127.0.0.1:{port}, {mib} MiB, {slots} slots");
    for stream in listener.incoming().flatten() {
        let store = Arc::clone(&store);
        std::thread::spawn(move || serve(stream, &store, mib << 20));
    }
}

/// Serves one client until it closes, `QUIT`s or breaks the protocol; requests and replies of
/// up to `lend` bytes get a buffer that large.
fn serve(mut stream: TcpStream, store: &Mutex<Store<'static>>, lend: usize) {
    let _ = stream.set_nodelay(true);
    let (mut big_in, mut big_out) = (vec![0u8; lend], vec![0u8; lend]);
    let (mut spare_in, mut spare_out) = (Some(&mut big_in[..]), Some(&mut big_out[..]));
    let (mut input, mut output) = (vec![0u8; BUF], vec![0u8; BUF]);
    let Some(mut conn) = Connection::new(&mut input, &mut output) else {
        return;
    };
    conn.set_lendable(lend);
    let mut read = vec![0u8; BUF];
    // Received bytes the connection's buffer had no room for yet.
    let mut pending: Vec<u8> = Vec::new();
    loop {
        match stream.read(&mut read) {
            Ok(0) | Err(_) => return,
            Ok(n) => pending.extend_from_slice(&read[..n]),
        }
        loop {
            let taken = conn.receive(&pending);
            pending.drain(..taken);
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let progress = match store.lock() {
                Ok(mut st) => conn.process(&mut st, now),
                Err(_) => return,
            };
            if stream.write_all(conn.output()).is_err() {
                return;
            }
            let sent = conn.output().len();
            conn.consume_output(sent);
            let (lent_in, lent_out) = conn.take_lent();
            spare_in = spare_in.or(lent_in);
            spare_out = spare_out.or(lent_out);
            let mut lent = false;
            if conn.wants_input().is_some() {
                if let Some(buf) = spare_in.take() {
                    lent = true;
                    spare_in = conn.lend_input(buf).err();
                }
            }
            if conn.wants_output() {
                if let Some(buf) = spare_out.take() {
                    spare_out = conn.lend_output(buf).err();
                }
            }
            match progress {
                Progress::Close => return,
                Progress::NeedOutput => {}
                Progress::NeedInput if lent || (taken > 0 && !pending.is_empty()) => {}
                Progress::NeedInput => break,
            }
        }
    }
}
