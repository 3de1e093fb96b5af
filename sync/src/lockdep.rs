//! A lock-order checker in the manner of Linux's lockdep (feature `lockdep`): it learns the
//! order in which a kernel takes its locks and panics at the first acquisition that could
//! deadlock with an order it has already seen, naming both sites, without the deadlock having
//! to happen.
//!
//! # What it checks
//! Locks belong to **classes** ([`LockClass`]): one `static` per kind of lock ("TCB lock",
//! "run-queue lock"), however many instances of that kind there are. The checker keeps, for every
//! CPU, the stack of the classes that CPU holds, and for the whole system a directed graph of
//! classes: an edge `A -> B` means that some CPU has taken a lock of class `B` while holding one
//! of class `A`. Then:
//!
//! * **Order inversions.** When an acquisition adds an edge `A -> B` that the graph lacks, the
//!   checker searches for a path `B ->* A`. If there is one, the new edge would close a cycle:
//!   two CPUs following the two orders (or a chain of CPUs following a longer cycle) can each
//!   hold the lock that the next one waits for. The acquisition panics, naming the classes, the
//!   site of this acquisition, the site where the held lock was taken, and the recorded site of
//!   every edge of the opposite path (an AB/BA inversion names `B`'s site here and the site
//!   where `A` was taken under `B` before). The edge is not added, so the graph stays acyclic.
//! * **Same class twice.** A CPU that takes a lock of a class it already holds panics, naming
//!   both sites: two instances of one class taken in no fixed order deadlock against a CPU
//!   that takes them the other way round. Nesting by design is declared, as with Linux's
//!   subclasses: an acquisition may say it nests ([`acquire_nested`], [`Checked::lock_nested`]),
//!   or the locks of a class carry an ordering **key** ([`Checked::ordered`],
//!   [`acquire_ordered`]) and may be nested in strictly increasing key order, which is then
//!   checked (an array of locks taken in index order, for instance).
//! * **Release of a class not held**, and (for a kernel to call at its exit paths)
//!   [`Contexts::assert_none_held`]: a CPU that leaves with a lock still held.
//!
//! Trylocks never wait, so a successful [`KernelLock::try_lock`] ([`try_acquired`]) adds no
//! edge and is not checked; but the lock is on the CPU's stack, and what the CPU takes next is
//! ordered after it. Read and write acquisitions of a reader-writer lock count alike: with a
//! writer-preferring lock (such as [`BrLock`]) a reader waits behind a waiting writer, so a
//! read side in a cycle deadlocks as surely as a write side.
//!
//! # How: atomics only, no allocation
//! Everything is in fixed-size statics of atomics:
//!
//! * the class registry: [`MAX_CLASSES`] (64) classes, each given its index on its first
//!   acquisition (an atomic in the [`LockClass`] itself; registering one more panics, naming it);
//! * the graph: for every class a bitset of the classes taken after it (one machine word per 32
//!   or 64 classes: the adjacency matrix), and for every edge the site of the acquisition that
//!   first made it (`&'static core::panic::Location`, the caller's line through
//!   `#[track_caller]`);
//! * the held stacks: per **context** [`MAX_HELD`] (16) entries of class, key and acquisition
//!   site. A context is a CPU: plain CPU ids `0..`[`MAX_CPUS`] name contexts of their own
//!   ([`Contexts::CPUS`], what [`acquire`] and [`Checked::new`] use), for a kernel that runs
//!   alone on its machine. Several kernels in one process (tests on host threads) each
//!   [`claim`](Contexts::claim) a range of their own out of [`CLAIMABLE_CONTEXTS`] (64) more,
//!   so that their CPU 0s do not share a stack.
//!
//! An acquisition reads its context's stack and, for each class held, one bit of the graph;
//! only a new edge (at most `MAX_CLASSES²` in a boot, all in its first moments) takes the
//! checker's own spin lock, which serialises every change of the graph, registry and claims
//! with the search for a cycle.
//!
//! # Concurrency guarantees
//! * Each context's stack is read and written by its own CPU only (the caller passes its own
//!   id, as to every lock of this crate): the checker observes what *this* CPU holds, never
//!   another CPU's stack. Two threads that use one context at once make its stack meaningless
//!   (no undefined behaviour: it is all atomics), which is why concurrent kernels claim
//!   contexts.
//! * The graph is shared. Every edge is added under the checker's lock after a search of the
//!   graph as it stands, so of two acquisitions that would together close a cycle, whichever
//!   takes the lock second finds the other's edge and panics, whatever CPUs they run on and
//!   however close together: no cycle ever enters the graph. A CPU that sees an edge's bit set
//!   without the lock skips the search, rightly: the edge was searched when it was added.
//! * The check runs before the lock is taken: an acquisition that would deadlock against a
//!   recorded order panics instead of waiting.
//!
//! # Memory orderings (x86_64 / ARMv7 / AArch64)
//! * The checker's lock: `compare_exchange_weak(false, true, Acquire, Relaxed)` to take it
//!   (x86_64 `lock cmpxchg`; ARMv7 an `ldrex`/`strex` loop, then `dmb ish`; AArch64 `ldaxr`/
//!   `stxr`, or `casa` with LSE) and `store(false, Release)` to give it back (x86_64 `mov`;
//!   ARMv7 `dmb ish; str`; AArch64 `stlr`). Every other access to the registry, the graph and the
//!   claims happens under it, so the lock orders them: each holder sees everything earlier
//!   holders wrote, and those accesses are `Relaxed` (plain loads and stores on all three).
//! * The unlocked reads are `Relaxed` and only decide whether to take the lock: a class's
//!   index (seen 0, the class is registered under the lock, which reads it again), an edge's
//!   bit (seen clear, the edge is added under the lock, which reads it again; seen set, nothing
//!   is needed from the writer but the fact). Reports read the graph's sites after the lock is
//!   given back: a site is written once, before its edge's bit, and a report only reads the
//!   sites of edges its holder saw under the lock, which ordered their writes before it.
//! * A context's stack is `Relaxed` throughout: only its own CPU touches it, and a CPU sees its
//!   own writes in program order.
//!
//! # Cost and limits
//! * Time: per acquisition, a scan of the CPU's stack (at most [`MAX_HELD`] entries, a few in
//!   practice) with one load of the graph per held class; per release, a scan for the entry.
//!   With the feature off, nothing of this module is compiled.
//! * Memory: about 32 KiB of graph sites and 30 KiB of stacks on a 64-bit target (half on a
//!   32-bit one), in zero-initialised statics.
//! * It finds orders that ran: a cycle none of whose edges the run took is not reported. It
//!   checks classes, not instances: two instances of one class ordered by other means are
//!   reported unless the nesting is declared. It knows nothing of interrupt context (a kernel
//!   that takes locks in interrupt handlers with interrupts enabled elsewhere needs Linux's
//!   irq-safety checks, which this does not make), and only locks that report to it.
//!
//! # Example
//! ```
//! use kernel_locks::lockdep::{Checked, LockClass};
//! use kernel_locks::{KernelLock, TicketLock};
//!
//! static QUEUE: LockClass = LockClass::new("queue");
//! static TCB: LockClass = LockClass::new("tcb");
//!
//! let queue = Checked::new(TicketLock::new(), &QUEUE);
//! let tcb = |i| Checked::new(TicketLock::new(), &TCB).ordered(i);
//! let tcbs = [tcb(0), tcb(1)];
//!
//! // CPU 3: the queue, then two TCBs in increasing index order (declared by their keys).
//! queue.lock(3);
//! tcbs[0].lock(3);
//! tcbs[1].lock(3);
//! for lock in [&queue, &tcbs[0], &tcbs[1]] {
//!     // SAFETY: CPU 3 holds all three, and releases each once (in any order).
//!     unsafe { lock.unlock(3) };
//! }
//!
//! // The opposite order, a TCB then the queue, would deadlock against the first: it panics
//! // before waiting, naming this line and the line of `tcbs[0].lock(3)` above.
//! tcbs[0].lock(4);
//! let inversion = std::panic::catch_unwind(|| queue.lock(4));
//! assert!(inversion.is_err());
//! ```

// The checker's state is in statics, which need `const` constructors: its atomics are
// `core`'s, never loom's (the module is left out of `--cfg kernel_locks_loom` builds).
use core::fmt;
use core::panic::Location;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::*};

use crate::pad::Alignment;
use crate::raw::{CpuId, KernelLock, KernelRwLock};
use crate::relax::Relax;
use crate::{BrLock, TicketLock};

/// How many lock classes the checker knows at most; registering one more panics.
pub const MAX_CLASSES: usize = 64;

/// How many locks one CPU may hold at once; one more panics.
pub const MAX_HELD: usize = 16;

/// The plain CPU ids of [`Contexts::CPUS`]: `0..MAX_CPUS`.
pub const MAX_CPUS: usize = 16;

/// How many more contexts [`Contexts::claim`] hands out, in ranges, to kernels running side by
/// side in one process.
pub const CLAIMABLE_CONTEXTS: usize = 64;

/// Bits per word of the graph's rows and of the claim bitmap.
const BITS: usize = usize::BITS as usize;

/// Words per row of the adjacency matrix.
const ROW_WORDS: usize = MAX_CLASSES.div_ceil(BITS);

/// Words of the claim bitmap.
const CLAIM_WORDS: usize = CLAIMABLE_CONTEXTS.div_ceil(BITS);

/// Every context: the plain CPU ids, then the claimable ones.
const CONTEXTS: usize = MAX_CPUS + CLAIMABLE_CONTEXTS;

/// The key of an entry without one (not ordered within its class).
const NO_KEY: usize = usize::MAX;

/// A kind of lock: every lock of a class is ordered as one. Put it in a `static`; it is given
/// its index on its first acquisition.
///
/// ```
/// use kernel_locks::lockdep::LockClass;
///
/// static RUN_QUEUE: LockClass = LockClass::new("run queue");
/// assert_eq!(RUN_QUEUE.name(), "run queue");
/// ```
pub struct LockClass {
    name: &'static str,
    /// 0 until registered, then the class's index + 1. Written once, under the checker's lock.
    id: AtomicUsize,
}

impl LockClass {
    /// A class named `name` (its name in reports).
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            id: AtomicUsize::new(0),
        }
    }

    /// The name given to [`new`](Self::new).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The class's index in the checker, `0..MAX_CLASSES`, registering it if it has none yet.
    ///
    /// # Panics
    /// When [`MAX_CLASSES`] classes are registered already.
    #[track_caller]
    pub fn index(&'static self) -> usize {
        // Relaxed: see the module documentation (a stale 0 is read again under the lock).
        match self.id.load(Relaxed) {
            0 => self.register(),
            id => id - 1,
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn register(&'static self) -> usize {
        let guard = STATE.lock();
        // Relaxed, here and below: under the checker's lock.
        let id = self.id.load(Relaxed);
        if id != 0 {
            return id - 1;
        }
        let index = STATE.registered.load(Relaxed);
        if index == MAX_CLASSES {
            drop(guard);
            panic!(
                "lockdep: lock class `{}` is one too many: the checker holds {MAX_CLASSES} \
                 classes (lockdep::MAX_CLASSES)",
                self.name
            );
        }
        STATE.classes[index].store(ptr::from_ref(self).cast_mut(), Relaxed);
        STATE.registered.store(index + 1, Relaxed);
        self.id.store(index + 1, Relaxed);
        index
    }
}

impl fmt::Debug for LockClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LockClass({:?})", self.name)
    }
}

/// The shared state: the registry, the order graph and the context claims, all changed under
/// `busy` (the checker's spin lock).
struct State {
    busy: AtomicBool,
    registered: AtomicUsize,
    classes: [AtomicPtr<LockClass>; MAX_CLASSES],
    /// `after[a]`, bit `b`: the edge `a -> b` (`b` taken while `a` was held).
    after: [[AtomicUsize; ROW_WORDS]; MAX_CLASSES],
    /// `sites[a][b]`: where the first acquisition of `b` under `a` took place.
    sites: [[AtomicPtr<Location<'static>>; MAX_CLASSES]; MAX_CLASSES],
    /// Bit `i`: claimable context `i` (context `MAX_CPUS + i`) is claimed.
    claimed: [AtomicUsize; CLAIM_WORDS],
}

static STATE: State = State {
    busy: AtomicBool::new(false),
    registered: AtomicUsize::new(0),
    classes: [const { AtomicPtr::new(ptr::null_mut()) }; MAX_CLASSES],
    after: [const { [const { AtomicUsize::new(0) }; ROW_WORDS] }; MAX_CLASSES],
    sites: [const { [const { AtomicPtr::new(ptr::null_mut()) }; MAX_CLASSES] }; MAX_CLASSES],
    claimed: [const { AtomicUsize::new(0) }; CLAIM_WORDS],
};

/// The checker's lock, held; released on drop (on unwinding too).
struct StateGuard;

impl Drop for StateGuard {
    fn drop(&mut self) {
        // Release: publishes this holder's writes to the next (module documentation).
        STATE.busy.store(false, Release);
    }
}

impl State {
    fn lock(&self) -> StateGuard {
        // Acquire: pairs with the previous holder's release (module documentation).
        while self
            .busy
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        StateGuard
    }

    /// Whether the edge `from -> to` is in the graph (an unlocked read is a hint; under the
    /// lock it is exact).
    fn has_edge(&self, from: usize, to: usize) -> bool {
        // Relaxed: module documentation.
        self.after[from][to / BITS].load(Relaxed) & (1 << (to % BITS)) != 0
    }

    /// The name of the class of index `index`, for reports (`?` if none is registered there,
    /// which only a context corrupted by two threads at once can name).
    fn name(&self, index: usize) -> &'static str {
        // Relaxed: the caller synchronised with the registration through the lock.
        let class = self
            .classes
            .get(index)
            .map_or(ptr::null_mut(), |c| c.load(Relaxed));
        // SAFETY: a slot of the registry is null or a `&'static LockClass` stored by
        // `register`; nothing ever writes through it.
        unsafe { class.as_ref() }.map_or("?", |class| class.name)
    }

    /// The site recorded for the edge `from -> to` (in the graph).
    fn site(&self, from: usize, to: usize) -> Site {
        // Relaxed: module documentation (written before the edge's bit, read after the lock).
        let site = self.sites[from][to].load(Relaxed);
        // SAFETY: a site of the graph is null or a `&'static Location` stored by `add_edge`.
        Site(unsafe { site.as_ref() })
    }

    /// Adds the edge `from -> to`, first made at `site`, unless the graph has a path
    /// `to ->* from`, which it returns.
    fn add_edge(
        &self,
        from: usize,
        to: usize,
        site: &'static Location<'static>,
    ) -> Result<(), Path> {
        let _guard = self.lock();
        if self.has_edge(from, to) {
            return Ok(());
        }
        if let Some(path) = self.path(to, from) {
            return Err(path);
        }
        // Relaxed: under the lock. The site before the bit: an unlocked reader that sees the
        // bit does not read the site; a report reads it after synchronising with this lock.
        self.sites[from][to].store(ptr::from_ref(site).cast_mut(), Relaxed);
        let word = &self.after[from][to / BITS];
        // Only holders of the lock write rows: a load and a store make the update.
        word.store(word.load(Relaxed) | 1 << (to % BITS), Relaxed);
        Ok(())
    }

    /// A shortest path `start ->* goal` in the graph (breadth first), under the lock.
    fn path(&self, start: usize, goal: usize) -> Option<Path> {
        let mut parent = [u8::MAX; MAX_CLASSES];
        let mut seen = [0usize; ROW_WORDS];
        let mut queue = [0u8; MAX_CLASSES];
        let (mut head, mut tail) = (0, 1);
        queue[0] = start as u8;
        seen[start / BITS] |= 1 << (start % BITS);
        while head < tail {
            let from = usize::from(queue[head]);
            head += 1;
            for (w, word) in self.after[from].iter().enumerate() {
                // Relaxed: under the lock.
                let mut bits = word.load(Relaxed) & !seen[w];
                while bits != 0 {
                    let to = w * BITS + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    seen[w] |= 1 << (to % BITS);
                    parent[to] = from as u8;
                    if to == goal {
                        return Some(Path::from_parents(&parent, start, goal));
                    }
                    queue[tail] = to as u8;
                    tail += 1;
                }
            }
        }
        None
    }
}

/// A path of classes in the graph, `classes[0] -> classes[1] -> ... -> classes[len - 1]`.
struct Path {
    classes: [u8; MAX_CLASSES],
    len: usize,
}

impl Path {
    fn from_parents(parent: &[u8; MAX_CLASSES], start: usize, goal: usize) -> Self {
        let mut classes = [0u8; MAX_CLASSES];
        let mut len = 0;
        let mut at = goal;
        loop {
            classes[len] = at as u8;
            len += 1;
            if at == start {
                break;
            }
            at = usize::from(parent[at]);
        }
        classes[..len].reverse();
        Self { classes, len }
    }

    fn hops(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.classes[..self.len]
            .windows(2)
            .map(|w| (usize::from(w[0]), usize::from(w[1])))
    }
}

/// One lock on a CPU's stack.
struct Entry {
    class: AtomicUsize,
    key: AtomicUsize,
    site: AtomicPtr<Location<'static>>,
}

/// A context's held-lock stack (entries `0..depth`, oldest first).
struct Stack {
    depth: AtomicUsize,
    entries: [Entry; MAX_HELD],
}

static STACKS: [Stack; CONTEXTS] = [const {
    Stack {
        depth: AtomicUsize::new(0),
        entries: [const {
            Entry {
                class: AtomicUsize::new(0),
                key: AtomicUsize::new(NO_KEY),
                site: AtomicPtr::new(ptr::null_mut()),
            }
        }; MAX_HELD],
    }
}; CONTEXTS];

/// One entry of a stack, read (`Relaxed`: the stack's own CPU wrote it).
#[derive(Clone, Copy)]
struct Held {
    class: usize,
    key: usize,
    site: Site,
}

/// An acquisition site in a report; `None` only where a context's stack was corrupted by two
/// threads using it at once.
#[derive(Clone, Copy)]
struct Site(Option<&'static Location<'static>>);

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(site) => site.fmt(f),
            None => f.write_str("an unknown site"),
        }
    }
}

impl Stack {
    fn get(&self, i: usize) -> Held {
        let entry = &self.entries[i];
        // Relaxed: only this context's CPU writes its stack (module documentation).
        let site = entry.site.load(Relaxed);
        Held {
            class: entry.class.load(Relaxed),
            key: entry.key.load(Relaxed),
            // SAFETY: an entry's site is null or a `&'static Location` stored by `set`.
            site: Site(unsafe { site.as_ref() }),
        }
    }

    fn set(&self, i: usize, held: Held) {
        let entry = &self.entries[i];
        // Relaxed: only this context's CPU touches its stack.
        entry.class.store(held.class, Relaxed);
        entry.key.store(held.key, Relaxed);
        let site = held
            .site
            .0
            .map_or(ptr::null_mut(), |s| ptr::from_ref(s).cast_mut());
        entry.site.store(site, Relaxed);
    }

    fn depth(&self) -> usize {
        // Relaxed: only this context's CPU touches its stack.
        self.depth.load(Relaxed)
    }

    fn set_depth(&self, depth: usize) {
        // Relaxed: only this context's CPU touches its stack.
        self.depth.store(depth, Relaxed);
    }
}

/// How an acquisition may meet its own class on the CPU's stack.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nesting {
    /// Not at all: the class held already panics.
    No,
    /// In any order (declared nested by design).
    Any,
    /// After locks of the class with smaller keys only; the acquisition's key.
    Ordered(usize),
}

/// A range of contexts: the held-lock stacks of the CPUs `0..len()` of one kernel (see the
/// [module documentation](self)). [`CPUS`](Self::CPUS) are the plain CPU ids; a kernel that
/// may run beside others in one process [`claim`](Self::claim)s its own.
///
/// Its methods are the checker's free-function API for code with its own locking: report
/// every acquisition before it waits and every release, on the CPU that performs it.
///
/// ```
/// use kernel_locks::lockdep::{Contexts, LockClass};
///
/// static IRQ_TABLE: LockClass = LockClass::new("irq table");
///
/// let kernel = Contexts::claim(2); // CPUs 0 and 1 of this kernel
/// let cpus = kernel.contexts();
/// cpus.acquire(&IRQ_TABLE, 1); // ... then take the lock
/// assert_eq!(cpus.held(1), 1);
/// cpus.release(&IRQ_TABLE, 1); // ... and release it
/// cpus.assert_none_held(1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contexts {
    base: usize,
    len: usize,
}

impl Contexts {
    /// The contexts of the plain CPU ids `0..MAX_CPUS`, for a kernel alone on its machine: what
    /// [`acquire`] and the other free functions, and [`Checked::new`], use.
    pub const CPUS: Self = Self {
        base: 0,
        len: MAX_CPUS,
    };

    /// Claims `cpus` contexts of their own, for a kernel that may run beside others in one
    /// process (on host threads): CPU `i` of it uses context `i` of the claim. They are given
    /// back, emptied, when the claim is dropped.
    ///
    /// # Panics
    /// If `cpus` is 0, or no `cpus` consecutive contexts of the [`CLAIMABLE_CONTEXTS`] are free.
    #[track_caller]
    pub fn claim(cpus: usize) -> ContextClaim {
        assert!(cpus > 0, "lockdep: a claim of 0 contexts");
        let guard = STATE.lock();
        // Relaxed: the claim bitmap changes under the lock only.
        let claimed = |i: usize| STATE.claimed[i / BITS].load(Relaxed) & (1 << (i % BITS)) != 0;
        let free = (cpus <= CLAIMABLE_CONTEXTS)
            .then(|| {
                (0..=CLAIMABLE_CONTEXTS - cpus)
                    .find(|&first| (first..first + cpus).all(|i| !claimed(i)))
            })
            .flatten();
        let Some(first) = free else {
            drop(guard);
            panic!(
                "lockdep: no {cpus} free contexts to claim (lockdep::CLAIMABLE_CONTEXTS = \
                 {CLAIMABLE_CONTEXTS}): too many kernels at once, or claims never dropped"
            );
        };
        for i in first..first + cpus {
            let word = &STATE.claimed[i / BITS];
            word.store(word.load(Relaxed) | 1 << (i % BITS), Relaxed);
        }
        let contexts = Self {
            base: MAX_CPUS + first,
            len: cpus,
        };
        contexts.clear();
        ContextClaim { contexts }
    }

    /// How many CPUs the range holds: valid ids are `0..len()`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty (never: ranges hold at least one CPU).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the stacks of every CPU of the range.
    fn clear(&self) {
        for stack in &STACKS[self.base..self.base + self.len] {
            stack.set_depth(0);
        }
    }

    #[track_caller]
    fn stack(&self, cpu: CpuId) -> &'static Stack {
        if cpu >= self.len {
            cpu_out_of_range(cpu, self.len);
        }
        &STACKS[self.base + cpu]
    }

    /// Reports that `cpu` is about to take a lock of `class`, and waits for it if needed:
    /// checks the order against the locks `cpu` holds and records it. Call it before the
    /// acquisition (so that a deadlock is reported, not waited for), on `cpu`.
    ///
    /// # Panics
    /// If `cpu` holds a lock of `class` already, if this order inverts one recorded (a cycle),
    /// if `cpu` holds [`MAX_HELD`] locks, or if `cpu` is out of range.
    #[track_caller]
    pub fn acquire(self, class: &'static LockClass, cpu: CpuId) {
        self.check_and_push(class, cpu, Nesting::No, Location::caller());
    }

    /// [`acquire`](Self::acquire) for a lock that `cpu` may take while it holds others of
    /// `class`, in any order: nested by design (the caller orders those locks by other means).
    #[track_caller]
    pub fn acquire_nested(self, class: &'static LockClass, cpu: CpuId) {
        self.check_and_push(class, cpu, Nesting::Any, Location::caller());
    }

    /// [`acquire`](Self::acquire) for a lock of an ordered class: `cpu` may hold locks of
    /// `class` with keys smaller than `key` (an array of locks taken in index order). A held
    /// lock of `class` with a key of `key` or more, or with none, panics.
    #[track_caller]
    pub fn acquire_ordered(self, class: &'static LockClass, cpu: CpuId, key: usize) {
        assert!(key != NO_KEY, "lockdep: key usize::MAX is reserved");
        self.check_and_push(class, cpu, Nesting::Ordered(key), Location::caller());
    }

    /// Reports that `cpu` took a lock of `class` without waiting (a successful trylock): no
    /// order is checked or recorded for it, but what `cpu` takes while holding it is ordered
    /// after it. `key`: the lock's key within an ordered class, if it has one.
    #[track_caller]
    pub fn try_acquired(self, class: &'static LockClass, cpu: CpuId, key: Option<usize>) {
        let stack = self.stack(cpu);
        self.push(
            stack,
            cpu,
            Held {
                class: class.index(),
                key: key.unwrap_or(NO_KEY),
                site: Site(Some(Location::caller())),
            },
        );
    }

    /// Reports that `cpu` released a lock of `class` (in any order: the most recent entry of
    /// `class` leaves the stack).
    ///
    /// # Panics
    /// If `cpu` holds no lock of `class`.
    #[track_caller]
    pub fn release(self, class: &'static LockClass, cpu: CpuId) {
        self.remove(class, cpu, None);
    }

    /// [`release`](Self::release) of the lock of `class` with key `key` (an ordered class).
    #[track_caller]
    pub fn release_ordered(self, class: &'static LockClass, cpu: CpuId, key: usize) {
        self.remove(class, cpu, Some(key));
    }

    /// How many locks `cpu` holds (as reported to the checker).
    #[track_caller]
    pub fn held(self, cpu: CpuId) -> usize {
        self.stack(cpu).depth()
    }

    /// Panics, naming every lock `cpu` holds and where it took it, unless it holds none: for a
    /// kernel's exit paths.
    #[track_caller]
    pub fn assert_none_held(self, cpu: CpuId) {
        let stack = self.stack(cpu);
        if stack.depth() != 0 {
            still_held(stack, cpu);
        }
    }

    #[track_caller]
    fn check_and_push(
        self,
        class: &'static LockClass,
        cpu: CpuId,
        nesting: Nesting,
        site: &'static Location<'static>,
    ) {
        let stack = self.stack(cpu);
        let to = class.index();
        for i in 0..stack.depth() {
            let held = stack.get(i);
            if held.class == to {
                match nesting {
                    Nesting::Any => continue,
                    // `NO_KEY` is the largest key: a held lock without one never passes.
                    Nesting::Ordered(key) if held.key < key => continue,
                    _ => same_class(cpu, class, nesting, site, held),
                }
            }
            // Relaxed hint: a clear bit is read again under the lock (`add_edge`).
            if !STATE.has_edge(held.class, to) {
                if let Err(path) = STATE.add_edge(held.class, to, site) {
                    inversion(cpu, site, to, held, &path);
                }
            }
        }
        let key = match nesting {
            Nesting::Ordered(key) => key,
            _ => NO_KEY,
        };
        let site = Site(Some(site));
        self.push(
            stack,
            cpu,
            Held {
                class: to,
                key,
                site,
            },
        );
    }

    #[track_caller]
    fn push(self, stack: &Stack, cpu: CpuId, held: Held) {
        let depth = stack.depth();
        if depth == MAX_HELD {
            too_many(stack, cpu);
        }
        stack.set(depth, held);
        stack.set_depth(depth + 1);
    }

    #[track_caller]
    fn remove(self, class: &'static LockClass, cpu: CpuId, key: Option<usize>) {
        let stack = self.stack(cpu);
        let index = class.index();
        let depth = stack.depth();
        let found = (0..depth).rev().find(|&i| {
            let held = stack.get(i);
            held.class == index && key.is_none_or(|key| held.key == key)
        });
        let Some(found) = found else {
            not_held(cpu, class, key);
        };
        for i in found + 1..depth {
            stack.set(i - 1, stack.get(i));
        }
        stack.set_depth(depth - 1);
    }
}

/// Contexts claimed by [`Contexts::claim`]; given back, emptied, on drop. Locks built with
/// its [`contexts`](Self::contexts) must not outlive it (their CPUs' stacks would be another
/// kernel's).
#[derive(Debug)]
pub struct ContextClaim {
    contexts: Contexts,
}

impl ContextClaim {
    /// The claimed range.
    pub fn contexts(&self) -> Contexts {
        self.contexts
    }
}

impl Drop for ContextClaim {
    fn drop(&mut self) {
        let _guard = STATE.lock();
        self.contexts.clear();
        for i in self.contexts.base - MAX_CPUS..self.contexts.base - MAX_CPUS + self.contexts.len {
            let word = &STATE.claimed[i / BITS];
            // Relaxed: under the lock.
            word.store(word.load(Relaxed) & !(1 << (i % BITS)), Relaxed);
        }
    }
}

/// [`Contexts::acquire`] on the plain CPU ids ([`Contexts::CPUS`]).
#[track_caller]
pub fn acquire(class: &'static LockClass, cpu: CpuId) {
    Contexts::CPUS.acquire(class, cpu);
}

/// [`Contexts::acquire_nested`] on the plain CPU ids.
#[track_caller]
pub fn acquire_nested(class: &'static LockClass, cpu: CpuId) {
    Contexts::CPUS.acquire_nested(class, cpu);
}

/// [`Contexts::acquire_ordered`] on the plain CPU ids.
#[track_caller]
pub fn acquire_ordered(class: &'static LockClass, cpu: CpuId, key: usize) {
    Contexts::CPUS.acquire_ordered(class, cpu, key);
}

/// [`Contexts::try_acquired`] on the plain CPU ids.
#[track_caller]
pub fn try_acquired(class: &'static LockClass, cpu: CpuId, key: Option<usize>) {
    Contexts::CPUS.try_acquired(class, cpu, key);
}

/// [`Contexts::release`] on the plain CPU ids.
#[track_caller]
pub fn release(class: &'static LockClass, cpu: CpuId) {
    Contexts::CPUS.release(class, cpu);
}

/// [`Contexts::release_ordered`] on the plain CPU ids.
#[track_caller]
pub fn release_ordered(class: &'static LockClass, cpu: CpuId, key: usize) {
    Contexts::CPUS.release_ordered(class, cpu, key);
}

/// [`Contexts::held`] on the plain CPU ids.
#[track_caller]
pub fn held(cpu: CpuId) -> usize {
    Contexts::CPUS.held(cpu)
}

/// Whether the checker has recorded the order `from -> to` (a CPU took a lock of class `to`
/// while holding one of class `from`), and where it first saw it: for tests and reports of the
/// order a run followed. Only direct edges: an order implied by a chain is not one.
pub fn recorded(
    from: &'static LockClass,
    to: &'static LockClass,
) -> Option<&'static Location<'static>> {
    let _guard = STATE.lock();
    // Relaxed: under the lock (a class not registered has no edge).
    let (from, to) = (from.id.load(Relaxed), to.id.load(Relaxed));
    if from == 0 || to == 0 || !STATE.has_edge(from - 1, to - 1) {
        return None;
    }
    STATE.site(from - 1, to - 1).0
}

/// The report of an order inversion: the acquisition of `to` at `site` while `cpu` holds
/// `held`, against the recorded `path` from `to` back to `held`'s class.
struct Inversion<'a> {
    cpu: CpuId,
    site: &'static Location<'static>,
    to: usize,
    held: Held,
    path: &'a Path,
}

impl fmt::Display for Inversion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |i| STATE.name(i);
        write!(
            f,
            "lockdep: lock order inversion on CPU {}: `{}` acquired at {} while holding `{}` \
             (acquired at {}), against the recorded order ",
            self.cpu,
            name(self.to),
            self.site,
            name(self.held.class),
            self.held.site
        )?;
        for (i, (from, to)) in self.path.hops().enumerate() {
            if i == 0 {
                write!(f, "`{}`", name(from))?;
            }
            write!(
                f,
                " -> `{}` (`{}` acquired at {} while holding `{}`)",
                name(to),
                name(to),
                STATE.site(from, to),
                name(from)
            )?;
        }
        f.write_str(": CPUs following both orders can deadlock")
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn inversion(
    cpu: CpuId,
    site: &'static Location<'static>,
    to: usize,
    held: Held,
    path: &Path,
) -> ! {
    panic!(
        "{}",
        Inversion {
            cpu,
            site,
            to,
            held,
            path
        }
    );
}

#[cold]
#[inline(never)]
#[track_caller]
fn same_class(
    cpu: CpuId,
    class: &LockClass,
    nesting: Nesting,
    site: &'static Location<'static>,
    held: Held,
) -> ! {
    match (nesting, held.key) {
        (Nesting::Ordered(key), NO_KEY) => panic!(
            "lockdep: CPU {cpu} acquires `{}` key {key} at {site} while holding a lock of the \
             class without a key (acquired at {})",
            class.name, held.site
        ),
        (Nesting::Ordered(key), held_key) => panic!(
            "lockdep: CPU {cpu} acquires `{}` key {key} at {site} while holding key {held_key} \
             (acquired at {}): locks of this class nest in increasing key order only",
            class.name, held.site
        ),
        _ => panic!(
            "lockdep: CPU {cpu} acquires a second lock of class `{}` at {site} while holding one \
             (acquired at {}); nesting by design is declared with `acquire_nested` / \
             `Checked::lock_nested`, or by keys (`Checked::ordered`)",
            class.name, held.site
        ),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn not_held(cpu: CpuId, class: &LockClass, key: Option<usize>) -> ! {
    match key {
        Some(key) => panic!(
            "lockdep: CPU {cpu} releases `{}` key {key}, which it does not hold",
            class.name
        ),
        None => panic!(
            "lockdep: CPU {cpu} releases a lock of class `{}`, but holds none",
            class.name
        ),
    }
}

/// The locks of a stack, for reports: `` `class` (acquired at site), ...``.
struct Stacked<'a>(&'a Stack);

impl fmt::Display for Stacked<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.0.depth() {
            let held = self.0.get(i);
            let sep = if i == 0 { "" } else { ", " };
            write!(
                f,
                "{sep}`{}` (acquired at {})",
                STATE.name(held.class),
                held.site
            )?;
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn too_many(stack: &Stack, cpu: CpuId) -> ! {
    panic!(
        "lockdep: CPU {cpu} takes a lock while holding {MAX_HELD} (lockdep::MAX_HELD): {}",
        Stacked(stack)
    );
}

#[cold]
#[inline(never)]
#[track_caller]
fn still_held(stack: &Stack, cpu: CpuId) -> ! {
    panic!("lockdep: CPU {cpu} still holds {}", Stacked(stack));
}

#[cold]
#[inline(never)]
#[track_caller]
fn cpu_out_of_range(cpu: CpuId, len: usize) -> ! {
    panic!("lockdep: CPU id {cpu} out of range (these contexts hold CPUs 0..{len})");
}

/// A lock `L` whose every acquisition and release is reported to the checker, as a lock of
/// class `class`: a [`KernelLock`] (and [`KernelRwLock`] when `L` is one) over any lock.
///
/// Acquisitions are checked before `L` waits; every method is `#[track_caller]`, so the
/// sites in reports are the caller's lines. Besides the trait, the lock-specific operations of
/// [`TicketLock`] and [`BrLock`] that a kernel's hot paths use are provided, reported in the
/// same way; [`inner`](Self::inner) reaches the rest (unchecked: don't lock through it).
///
/// ```
/// use kernel_locks::lockdep::{Checked, LockClass};
/// use kernel_locks::{ClhLock, Mutex};
///
/// static LOG: LockClass = LockClass::new("log");
/// static LOG_LOCK: Mutex<Checked<ClhLock<4>>, u32> =
///     Mutex::new(Checked::new(ClhLock::new(), &LOG), 0);
///
/// *LOG_LOCK.lock(2) += 1; // checked, then released (and reported) with the guard
/// assert_eq!(*LOG_LOCK.lock(0), 1);
/// ```
pub struct Checked<L> {
    lock: L,
    class: &'static LockClass,
    /// The lock's key within its class, or `NO_KEY`.
    key: usize,
    contexts: Contexts,
}

impl<L> Checked<L> {
    /// `lock`, checked as a lock of `class`, on the plain CPU ids ([`Contexts::CPUS`]).
    pub const fn new(lock: L, class: &'static LockClass) -> Self {
        Self {
            lock,
            class,
            key: NO_KEY,
            contexts: Contexts::CPUS,
        }
    }

    /// The lock with key `key` within its class: a CPU may take it while holding locks of the
    /// class with smaller keys ([`acquire_ordered`]).
    ///
    /// # Panics
    /// If `key` is `usize::MAX` (reserved).
    pub const fn ordered(mut self, key: usize) -> Self {
        assert!(key != NO_KEY, "lockdep: key usize::MAX is reserved");
        self.key = key;
        self
    }

    /// The lock with its CPUs' stacks in `contexts` (a kernel's claim, see
    /// [`Contexts::claim`]).
    pub const fn in_contexts(mut self, contexts: Contexts) -> Self {
        self.contexts = contexts;
        self
    }

    /// The lock itself. Locking or unlocking it directly bypasses the checker.
    pub fn inner(&self) -> &L {
        &self.lock
    }

    /// The lock's class.
    pub fn class(&self) -> &'static LockClass {
        self.class
    }

    /// The contexts the lock reports to.
    pub fn contexts(&self) -> Contexts {
        self.contexts
    }

    /// Reports an acquisition by `cpu` about to wait (the lock's own nesting).
    #[inline]
    #[track_caller]
    fn acquiring(&self, cpu: CpuId) {
        if self.key == NO_KEY {
            self.contexts.acquire(self.class, cpu);
        } else {
            self.contexts.acquire_ordered(self.class, cpu, self.key);
        }
    }

    /// Reports a trylock by `cpu` if it succeeded (`locked`); returns `locked`.
    #[inline]
    #[track_caller]
    fn tried(&self, cpu: CpuId, locked: bool) -> bool {
        if locked {
            let key = (self.key != NO_KEY).then_some(self.key);
            self.contexts.try_acquired(self.class, cpu, key);
        }
        locked
    }

    /// Reports a release by `cpu`.
    #[inline]
    #[track_caller]
    fn releasing(&self, cpu: CpuId) {
        if self.key == NO_KEY {
            self.contexts.release(self.class, cpu);
        } else {
            self.contexts.release_ordered(self.class, cpu, self.key);
        }
    }
}

impl<L: KernelLock> Checked<L> {
    /// [`lock`](KernelLock::lock), declared nested by design: `cpu` may hold other locks of
    /// the class, in any order ([`acquire_nested`]).
    #[track_caller]
    pub fn lock_nested(&self, cpu: CpuId) {
        self.contexts.acquire_nested(self.class, cpu);
        self.lock.lock(cpu);
    }
}

/// `L`'s bound (an instance's contexts may lower its run-time count, as for
/// [`max_cpus`](KernelLock::max_cpus)).
impl<L: crate::raw::MaxCpus> crate::raw::MaxCpus for Checked<L> {
    const MAX_CPUS: usize = L::MAX_CPUS;
}

impl<L: fmt::Debug> fmt::Debug for Checked<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checked")
            .field("lock", &self.lock)
            .field("class", &self.class.name)
            .finish_non_exhaustive()
    }
}

// SAFETY: every operation is `L`'s, after or before a report to the checker, which touches
// only the checker's own state: mutual exclusion, orderings and `is_locked`'s purity are `L`'s.
unsafe impl<L: KernelLock> KernelLock for Checked<L> {
    fn name(&self) -> &'static str {
        self.lock.name()
    }

    /// `L`'s, within the lock's contexts.
    fn max_cpus(&self) -> usize {
        self.lock.max_cpus().min(self.contexts.len)
    }

    #[track_caller]
    fn lock(&self, cpu: CpuId) {
        self.acquiring(cpu);
        self.lock.lock(cpu);
    }

    #[track_caller]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        // The checker checks `cpu` against its contexts whatever the caller checked.
        self.acquiring(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.lock_unchecked(cpu) }
    }

    #[track_caller]
    fn try_lock(&self, cpu: CpuId) -> bool {
        self.tried(cpu, self.lock.try_lock(cpu))
    }

    #[track_caller]
    unsafe fn unlock(&self, cpu: CpuId) {
        self.releasing(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.unlock(cpu) }
    }

    fn is_locked(&self) -> bool {
        self.lock.is_locked()
    }
}

// SAFETY: as for `KernelLock`: the shared side is `L`'s, with reports around it.
unsafe impl<L: KernelRwLock> KernelRwLock for Checked<L> {
    #[track_caller]
    fn read_lock(&self, cpu: CpuId) {
        self.acquiring(cpu);
        self.lock.read_lock(cpu);
    }

    #[track_caller]
    fn try_read_lock(&self, cpu: CpuId) -> bool {
        self.tried(cpu, self.lock.try_read_lock(cpu))
    }

    #[track_caller]
    unsafe fn read_unlock(&self, cpu: CpuId) {
        self.releasing(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.read_unlock(cpu) }
    }

    fn is_write_locked(&self) -> bool {
        self.lock.is_write_locked()
    }
}

/// The ticket lock's own operations, reported as [`KernelLock`]'s are.
impl<R: Relax, const BACKOFF: usize> Checked<TicketLock<R, BACKOFF>> {
    /// [`TicketLock::lock_prechecked`], reported.
    #[inline]
    #[track_caller]
    pub fn lock_prechecked(&self, cpu: CpuId) {
        self.acquiring(cpu);
        self.lock.lock_prechecked(cpu);
    }

    /// [`TicketLock::lock_all`], each acquisition reported in order before any is taken.
    #[track_caller]
    pub fn lock_all<const K: usize>(locks: [&Self; K], cpu: CpuId) {
        for lock in &locks {
            lock.acquiring(cpu);
        }
        TicketLock::lock_all(locks.map(|l| &l.lock), cpu);
    }

    /// [`TicketLock::lock_all_prechecked`], each acquisition reported in order before any is
    /// taken.
    #[track_caller]
    pub fn lock_all_prechecked<const K: usize>(locks: [&Self; K], cpu: CpuId) {
        for lock in &locks {
            lock.acquiring(cpu);
        }
        TicketLock::lock_all_prechecked(locks.map(|l| &l.lock), cpu);
    }

    /// [`TicketLock::unlock_all`], each release reported.
    ///
    /// # Safety
    /// As for [`TicketLock::unlock_all`].
    #[track_caller]
    pub unsafe fn unlock_all<const K: usize>(locks: [&Self; K], cpu: CpuId) {
        for lock in &locks {
            lock.releasing(cpu);
        }
        // SAFETY: forwarded contract.
        unsafe { TicketLock::unlock_all(locks.map(|l| &l.lock), cpu) }
    }

    /// [`TicketLock::unlock_fenced`], reported.
    ///
    /// # Safety
    /// As for [`TicketLock::unlock_fenced`].
    #[inline]
    #[track_caller]
    pub unsafe fn unlock_fenced(&self, cpu: CpuId) {
        self.releasing(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.unlock_fenced(cpu) }
    }

    /// [`TicketLock::queue_len`].
    pub fn queue_len(&self) -> usize {
        self.lock.queue_len()
    }
}

/// The big-reader lock's own operations, reported as [`KernelRwLock`]'s are.
impl<const N: usize, R: Relax, A: Alignment> Checked<BrLock<N, R, A>> {
    /// [`BrLock::read_lock_unnested`], reported.
    #[inline]
    #[track_caller]
    pub fn read_lock_unnested(&self, cpu: CpuId) {
        self.acquiring(cpu);
        self.lock.read_lock_unnested(cpu);
    }

    /// [`BrLock::read_lock_unnested_unchecked`], reported.
    ///
    /// # Safety
    /// As for [`BrLock::read_lock_unnested_unchecked`].
    #[inline]
    #[track_caller]
    pub unsafe fn read_lock_unnested_unchecked(&self, cpu: CpuId) {
        self.acquiring(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.read_lock_unnested_unchecked(cpu) }
    }

    /// [`BrLock::read_unlock_unnested`], reported.
    ///
    /// # Safety
    /// As for [`BrLock::read_unlock_unnested`].
    #[inline]
    #[track_caller]
    pub unsafe fn read_unlock_unnested(&self, cpu: CpuId) {
        self.releasing(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.read_unlock_unnested(cpu) }
    }

    /// [`BrLock::read_unlock_unnested_fenced`], reported.
    ///
    /// # Safety
    /// As for [`BrLock::read_unlock_unnested_fenced`].
    #[inline]
    #[track_caller]
    pub unsafe fn read_unlock_unnested_fenced(&self, cpu: CpuId) {
        self.releasing(cpu);
        // SAFETY: forwarded contract.
        unsafe { self.lock.read_unlock_unnested_fenced(cpu) }
    }

    /// [`BrLock::is_reading`].
    pub fn is_reading(&self, cpu: CpuId) -> bool {
        self.lock.is_reading(cpu)
    }

    /// [`BrLock::is_read_locked`].
    pub fn is_read_locked(&self) -> bool {
        self.lock.is_read_locked()
    }
}
