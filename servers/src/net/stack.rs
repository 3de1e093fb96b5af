//! One core's network stack and key-value server (see the module docs of [`super`]): a
//! smoltcp interface whose device is the core's pair of rings, [`SOCKETS`] TCP sockets on
//! port `PORT + core`, and a `kv_resp` store of its own.

use core::sync::atomic::{compiler_fence, AtomicUsize, Ordering};

use frame_ring::{Consumer, Doorbell, Producer};
use kv_resp::{Connection, Progress, Slot, Store};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, Ipv4Address};

use super::{
    links, Bump, Link, StackPlan, ADDRESS, CONN_IN, CONN_OUT, DRIVER_BELL, GATEWAY, LENT,
    MAX_FRAME, PORT, PREFIX, RING_SLOTS, SOCKETS, TCP_RX, TCP_TX, TICK,
};
use crate::debug;
use crate::image::info;
use crate::sys::{self, CapSlot, Counter};

/// A core's rings as smoltcp's `Device`: frames are read and written in the ring slots.
pub struct RingDevice {
    rx: Consumer<'static, RING_SLOTS, MAX_FRAME>,
    tx: Producer<'static, RING_SLOTS, MAX_FRAME>,
    /// A frame was put in the transmit ring since the last [`Stack::take_sent`].
    sent: bool,
}

/// A received frame, at the head of the receive ring.
pub struct RxToken<'a> {
    rx: &'a mut Consumer<'static, RING_SLOTS, MAX_FRAME>,
}

/// Room for one frame in the transmit ring.
pub struct TxToken<'a> {
    tx: &'a mut Producer<'static, RING_SLOTS, MAX_FRAME>,
    sent: &'a mut bool,
}

impl phy::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        // `receive` hands out a token only when a frame waits, and only the driver adds to
        // the ring.
        self.rx
            .pop(f)
            .expect("a receive token stands for a waiting frame")
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        *self.sent = true;
        // `transmit` hands out a token only with a free slot, and only the driver takes from
        // the ring.
        self.tx
            .push(|slot| {
                let len = len.min(MAX_FRAME);
                (len, f(&mut slot[..len]))
            })
            .expect("a transmit token stands for a free slot")
    }
}

impl phy::Device for RingDevice {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _: Instant) -> Option<(RxToken<'_>, TxToken<'_>)> {
        // No room for an answer: leave the frame in the ring for the next poll.
        if self.tx.is_full() || self.rx.is_empty() {
            return None;
        }
        Some((
            RxToken { rx: &mut self.rx },
            TxToken {
                tx: &mut self.tx,
                sent: &mut self.sent,
            },
        ))
    }

    fn transmit(&mut self, _: Instant) -> Option<TxToken<'_>> {
        (!self.tx.is_full()).then_some(TxToken {
            tx: &mut self.tx,
            sent: &mut self.sent,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME;
        caps.max_burst_size = Some(RING_SLOTS);
        caps
    }
}

/// The counter as smoltcp's clock.
struct Clock {
    counter: Counter,
    hz: u64,
    start: u64,
}

impl Clock {
    fn now(&self) -> Instant {
        let ticks = self.counter.read().wrapping_sub(self.start);
        let us = u128::from(ticks) * 1_000_000 / u128::from(self.hz);
        Instant::from_micros(us as i64)
    }
}

/// One listening or connected socket and its client's state.
struct Client {
    handle: SocketHandle,
    input: *mut [u8],
    output: *mut [u8],
    conn: Option<Connection<'static>>,
}

/// A core's stack and server, ready to serve.
pub struct Stack {
    index: usize,
    port: u16,
    link: &'static Link,
    dev: RingDevice,
    iface: Interface,
    sockets: SocketSet<'static>,
    /// One per socket (all `Some` once set up), in the heap: a table of [`SOCKETS`] clients
    /// would crowd the thread's stack.
    clients: &'static mut [Option<Client>],
    /// The buffers lent to one connection at a time for a request or a reply longer than its
    /// own buffers ([`LENT`] bytes each); `None` while lent.
    lent_in: Option<&'static mut [u8]>,
    lent_out: Option<&'static mut [u8]>,
    store: Store<'static>,
    clock: Clock,
}

impl Stack {
    /// Builds stack `plan.index` in its heap.
    ///
    /// # Safety
    /// Only this stack uses its link's receive-ring consumer and transmit-ring producer, and
    /// its heap, for the rest of the run.
    pub unsafe fn new(plan: &StackPlan) -> Result<Stack, &'static str> {
        let link = &links()[plan.index];
        // SAFETY: the caller's promise: this stack is the rings' only consumer (receive) and
        // only producer (transmit).
        let (rx, tx) = unsafe { (link.rx.consumer(), link.tx.producer()) };
        let mut dev = RingDevice {
            rx,
            tx,
            sent: false,
        };
        let counter = Counter::detect();
        let clock = Clock {
            counter,
            hz: plan.hz,
            start: counter.read(),
        };
        let mut heap = Bump {
            next: plan.heap_start,
            end: plan.heap_end,
        };
        let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(plan.mac)));
        cfg.random_seed = counter.read() ^ plan.index as u64;
        let mut iface = Interface::new(cfg, &mut dev, clock.now());
        let [a, b, c, d] = ADDRESS;
        iface.update_ip_addrs(|addrs| {
            let _ = addrs.push(IpCidr::new(Ipv4Address::new(a, b, c, d).into(), PREFIX));
        });
        let [a, b, c, d] = GATEWAY;
        iface
            .routes_mut()
            .add_default_ipv4_route(Ipv4Address::new(a, b, c, d))
            .map_err(|_| "no room for the default route")?;

        let port = PORT + plan.index as u16;
        let storage = heap.array(SOCKETS, || SocketStorage::EMPTY)?;
        let mut sockets = SocketSet::new(&mut storage[..]);
        let clients: &'static mut [Option<Client>] = heap.array(SOCKETS, || None)?;
        for c in clients.iter_mut() {
            let rx_buf = tcp::SocketBuffer::new(heap.bytes(TCP_RX)?);
            let tx_buf = tcp::SocketBuffer::new(heap.bytes(TCP_TX)?);
            let mut sock = tcp::Socket::new(rx_buf, tx_buf);
            listen(&mut sock, port);
            *c = Some(Client {
                handle: sockets.add(sock),
                input: heap.bytes(CONN_IN)?,
                output: heap.bytes(CONN_OUT)?,
                conn: None,
            });
        }
        let lent_in = Some(heap.bytes(LENT)?);
        let lent_out = Some(heap.bytes(LENT)?);
        let mut store = Store::new(
            heap.bytes(plan.arena)?,
            heap.array(plan.slots, || Slot::EMPTY)?,
        );
        store.set_info_section(info_sections);
        Ok(Stack {
            index: plan.index,
            port,
            link,
            dev,
            iface,
            sockets,
            clients,
            lent_in,
            lent_out,
            store,
            clock,
        })
    }

    /// One round: smoltcp processes what arrived and sends what is due, and every socket is
    /// served. Returns whether anything happened.
    pub fn step(&mut self) -> bool {
        let now = self.clock.now();
        let changed = self.iface.poll(now, &mut self.dev, &mut self.sockets);
        let served = self.serve_sockets(now);
        served || changed == smoltcp::iface::PollResult::SocketStateChanged
    }

    /// Whether a frame waits in the receive ring.
    pub fn has_input(&mut self) -> bool {
        !self.dev.rx.is_empty()
    }

    /// Whether frames were put in the transmit ring since the last call.
    pub fn take_sent(&mut self) -> bool {
        core::mem::take(&mut self.dev.sent)
    }

    /// How long until smoltcp has something to do with no frame arriving (a retransmission,
    /// a timer): `None` when only a frame can give it work.
    pub fn poll_delay(&mut self) -> Option<Duration> {
        self.iface.poll_delay(self.clock.now(), &self.sockets)
    }

    /// Polls until a frame arrives, `also` says there is work, or `delay` passes (no timed
    /// wait exists).
    pub fn poll_for(&mut self, delay: Duration, mut also: impl FnMut() -> bool) {
        let deadline = self.clock.now() + delay;
        while !self.has_input() && !also() && self.clock.now() < deadline {
            sys::yield_now();
            compiler_fence(Ordering::SeqCst);
        }
    }

    /// The loop of a stack on its own core (1 and up): serve, hand sent frames to the driver
    /// (waking it if it sleeps: `kick`), and when idle sleep on `sleep` ([`Stack::idle`]).
    pub fn run(mut self, kick: CapSlot, sleep: CapSlot, tick: CapSlot) -> ! {
        let bell = &self.link.bell;
        loop {
            let busy = self.step();
            if self.take_sent() && DRIVER_BELL.needs_wake() {
                // Cannot fail with the capability the setup made.
                let _ = sys::signal(kick);
            }
            if busy || self.has_input() {
                continue;
            }
            self.idle(bell, sleep, tick, || false);
        }
    }

    /// Nothing to do: wait for work, written once for the root (stack 0 and the driver) and
    /// the other stacks. While smoltcp has a timer due within a tick ([`TICK`]) this polls
    /// (yielding) until a frame arrives, `other_work` says there is some, or the timer is due.
    /// Otherwise it sleeps in `Wait` on `sleep` (announced on `bell`, whose producers wake it),
    /// with the core's tick line (`tick`) acknowledged first if a timer is pending, so that
    /// the next timer tick wakes it if nothing else does. Returns the notification word when
    /// it slept (a failed Wait, which cannot happen, reads as every bit).
    pub fn idle(
        &mut self,
        bell: &Doorbell,
        sleep: CapSlot,
        tick: CapSlot,
        mut other_work: impl FnMut() -> bool,
    ) -> Option<usize> {
        let deadline = self.poll_delay();
        match deadline {
            Some(d) if d == Duration::ZERO => return None,
            Some(d) if d < TICK => {
                self.poll_for(d, other_work);
                return None;
            }
            // Armed: the next tick signals `sleep` (then the line is masked again). Cannot
            // fail with the capability the setup made.
            Some(_) => {
                let _ = sys::ack_irq(tick);
            }
            None => {}
        }
        bell.prepare_sleep();
        let bits = (!self.has_input() && !other_work()).then(|| sys::wait(sleep).unwrap_or(!0));
        bell.awake();
        bits
    }

    /// Moves requests from every socket into its connection and the replies back; returns
    /// whether anything moved or a socket changed state.
    fn serve_sockets(&mut self, now: Instant) -> bool {
        let now_ms = now.total_millis() as u64;
        let mut any = false;
        let mut states = [0usize; 4];
        for c in self.clients.iter_mut().flatten() {
            let sock = self.sockets.get_mut::<tcp::Socket>(c.handle);
            use tcp::State as S;
            match sock.state() {
                S::Listen => states[0] += 1,
                S::SynReceived | S::SynSent | S::Established | S::CloseWait => states[1] += 1,
                S::FinWait1 | S::FinWait2 | S::Closing | S::LastAck => states[2] += 1,
                S::TimeWait => states[3] += 1,
                S::Closed => {}
            }
            if !sock.is_open() {
                // Closed (by either side, or reset): forget the client, taking back what was
                // lent to it, and listen again.
                if let Some(conn) = c.conn.take() {
                    let (input, output) = conn.into_lent();
                    self.lent_in = self.lent_in.take().or(input);
                    self.lent_out = self.lent_out.take().or(output);
                }
                listen(sock, self.port);
                any = true;
                continue;
            }
            // Closed on our side (a protocol error or QUIT: FIN sent) while the client goes on
            // sending: what it sends is never read. Once the last reply is acknowledged the
            // connection is reset, as a Redis server's close() with unread input resets it, so
            // that the client's next write fails instead of filling the window for ever.
            if matches!(sock.state(), S::FinWait1 | S::FinWait2 | S::Closing)
                && sock.recv_queue() > 0
                && sock.send_queue() == 0
            {
                sock.abort();
                any = true;
                continue;
            }
            // Not connected yet, or closing on our side (FIN sent): nothing to serve.
            if !sock.is_active() || sock.state() == tcp::State::SynReceived || !sock.may_send() {
                continue;
            }
            let conn = c.conn.get_or_insert_with(|| {
                // SAFETY: the buffers are this client's alone (from the heap, for the rest of
                // the run) and the connection that used them before, if any, was dropped
                // (`c.conn = None`) before this one is made.
                let (input, output) = unsafe { (&mut *c.input, &mut *c.output) };
                let mut conn =
                    Connection::new(input, output).expect("the buffers are above the minimum");
                conn.set_lendable(LENT);
                conn
            });
            loop {
                let mut moved = false;
                if sock.can_recv() {
                    let taken = sock
                        .recv(|data| {
                            let n = conn.receive(data);
                            (n, n)
                        })
                        .unwrap_or(0);
                    moved |= taken > 0;
                }
                let progress = conn.process(&mut self.store, now_ms);
                if !conn.output().is_empty() && sock.can_send() {
                    let sent = sock.send_slice(conn.output()).unwrap_or(0);
                    conn.consume_output(sent);
                    moved |= sent > 0;
                }
                // A request or reply longer than the connection's own buffers: lend it the
                // stack's while they are free, take them back once it is done. A connection
                // that finds them lent waits (its request stays buffered, nothing is lost).
                let (input, output) = conn.take_lent();
                self.lent_in = self.lent_in.take().or(input);
                self.lent_out = self.lent_out.take().or(output);
                if conn.wants_input().is_some() {
                    if let Some(buf) = self.lent_in.take() {
                        match conn.lend_input(buf) {
                            Ok(()) => moved = true,
                            Err(buf) => self.lent_in = Some(buf),
                        }
                    }
                }
                if conn.wants_output() {
                    if let Some(buf) = self.lent_out.take() {
                        match conn.lend_output(buf) {
                            Ok(()) => moved = true,
                            Err(buf) => self.lent_out = Some(buf),
                        }
                    }
                }
                let drained = conn.output().is_empty();
                if drained && (progress == Progress::Close || !sock.may_recv()) {
                    // QUIT, a protocol error, or the client closed its side: close ours once
                    // the replies are out.
                    sock.close();
                    any = true;
                    break;
                }
                any |= moved;
                if !moved {
                    break;
                }
            }
        }
        for (counter, n) in SOCKET_STATES[self.index].iter().zip(states) {
            counter.store(n, Ordering::Relaxed);
        }
        any
    }
}

/// Puts a closed socket back to listening on `port`, with delayed ACKs off (the reply carries
/// the ACK; a pending delayed ACK would keep the server polling).
fn listen(sock: &mut tcp::Socket<'_>, port: u16) {
    sock.set_ack_delay(None);
    sock.set_nagle_enabled(false);
    // Cannot fail: the socket is closed and the port is not 0.
    let _ = sock.listen(port);
}

/// Per stack, its sockets by state as it last saw them (`serve_sockets`): listening,
/// connected (established or half-closed by the client), closing on the server's side (FIN
/// sent: FIN-WAIT, CLOSING, LAST-ACK) and in TIME-WAIT. Written by the stack's thread, read
/// by its own `INFO`; atomics only because the section function has no other way to reach
/// them.
static SOCKET_STATES: [[AtomicUsize; 4]; abi::limits::MAX_CPUS] =
    [const { [const { AtomicUsize::new(0) }; 4] }; abi::limits::MAX_CPUS];

/// The server's own `INFO` sections (every stack's; the stack is the calling core's).
///
/// `# CPU`, which `cargo xtask bench redis` reads for the utilisation of each core:
/// the kernel's cycle counter and each core's idle cycles
/// ([`KernelInfo`](abi::Syscall::KernelInfo) keys `CYCLES` and `IDLE_BASE + c`), with the
/// counter's frequency and word size (on 32-bit machines the values are the low word: the
/// reader takes differences modulo `2^word_bits`, over intervals shorter than a wrap).
/// `# Sockets`: this stack's sockets by state ([`SOCKET_STATES`]). `# Net`: the stacks, this
/// one's port, the frames the driver put in its ring, and how often the driver found the ring
/// full and waited.
fn info_sections(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    use abi::syscall::info as kinfo;
    let cpus = debug::info(info::CPUS).clamp(1, abi::limits::MAX_CPUS);
    // Read the clock first: each idle count then covers at most what the clock does.
    let cycles = sys::kernel_info(kinfo::CYCLES).unwrap_or(0);
    write!(
        w,
        "# CPU\r\ncpus:{cpus}\r\ncounter_hz:{}\r\nword_bits:{}\r\nkernel_cycles:{cycles}\r\n",
        debug::info(info::COUNTER_HZ),
        usize::BITS
    )?;
    for c in 0..cpus {
        let idle = sys::kernel_info(kinfo::IDLE_BASE + c).unwrap_or(0);
        write!(w, "idle_cycles_cpu{c}:{idle}\r\n")?;
    }
    let stacks = links();
    let k = debug::cpu().min(stacks.len().saturating_sub(1));
    let [listening, connected, closing, time_wait] = SOCKET_STATES[k]
        .each_ref()
        .map(|a| a.load(Ordering::Relaxed));
    write!(
        w,
        "\r\n# Sockets\r\nsockets:{SOCKETS}\r\nsockets_listening:{listening}\r\n\
         sockets_connected:{connected}\r\nsockets_closing:{closing}\r\n\
         sockets_time_wait:{time_wait}\r\n"
    )?;
    let (delivered, waits) = stacks.get(k).map_or((0, 0), |l| {
        (
            l.delivered.load(Ordering::Relaxed),
            l.waits.load(Ordering::Relaxed),
        )
    });
    write!(
        w,
        "\r\n# Net\r\nstacks:{}\r\nstack:{k}\r\nport:{}\r\nframes_delivered:{delivered}\r\n\
         ring_full_waits:{waits}\r\n",
        stacks.len(),
        PORT as usize + k
    )
}
