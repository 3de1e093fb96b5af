//! The hardware abstraction the kernel core needs, and the per-core queue of hardware actions
//! that the kernel runs after leaving its critical section.
//!
//! # Which operations run where
//! * Inside the critical section, decode phase: [`Hal::prepare_map`], which may allocate empty
//!   page tables (not an observable change) and may fail; the kernel turns its failure into the
//!   system call's error before changing anything.
//! * Inside the critical section: only plain memory writes the hardware tolerates inside a
//!   transaction: [`Hal::map_page`], [`Hal::unmap_page`] and [`Hal::sweep`] (page-table stores).
//!   The page tables are the kernel's record of what is mapped: every leaf the kernel made
//!   carries a [`MapTag`] naming the memory region it was mapped through, which is how revoking
//!   a region finds its mappings ([`Hal::sweep`]).
//! * After the TLB shoot-down of an entry completed: [`Hal::reclaim_tables`], which returns the
//!   page tables that this core's unmaps emptied to the page-table pool (freeing them earlier
//!   would let a core that still caches a walk through them read a reused frame).
//! * After the critical section (after the lock release or the transaction commit), in this
//!   order: IRQ mask/unmask, local TLB flush, address-space switch, IPIs. These abort
//!   transactions (`MOV CR3`, APIC and device I/O) or cannot be undone (an IPI). The kernel
//!   records them in a per-core [`Actions`] record while executing; the two-phase system call
//!   guarantees that once execution starts it completes, so running them afterwards is safe.
//!
//! IPIs are fire-and-forget: the target handles them at its next kernel entry through
//! [`Kernel::ipi`](crate::Kernel::ipi). The one exception is the TLB shoot-down, which the
//! kernel makes synchronous with its own acknowledgement protocol on top of the IPI (see
//! [`Actions::acks`] and `kernel/shootdown.rs`): the core that removed a
//! mapping waits, after its critical section, until every target core flushed.

use crate::config::MAX_CPUS;
use crate::ids::{IrqId, ThreadId};
use kernel_locks::CpuId;

/// A TLB shoot-down generation of one core (see `kernel/shootdown.rs`): a
/// counter that wraps, compared modulo the word (pending: not equal; acknowledged: not a
/// little ahead), 0 reserved for "none". A word,
/// not a `u64`: the IPC path loads two generations per entry, and a 64-bit atomic load on
/// ARMv7 is an `ldrexd` and a `clrex` where a word is one `ldr`.
pub type TlbGeneration = usize;

/// A physical address.
pub type PhysAddr = u64;

/// Kinds of inter-processor interrupts (the same set as the x86 HAL's `IpiKind`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum IpiKind {
    /// Re-run the scheduler: a thread was woken on, or evicted from, the target core.
    Reschedule,
    /// Flush the TLB: a mapping the target may cache was removed.
    TlbShootdown,
    /// Stop the core.
    Halt,
    /// Boot self-test.
    Test,
}

impl IpiKind {
    /// Every kind, in bit order.
    pub const ALL: [IpiKind; 4] = [
        IpiKind::Reschedule,
        IpiKind::TlbShootdown,
        IpiKind::Halt,
        IpiKind::Test,
    ];

    /// A bit for sets of kinds.
    pub const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The memory region a leaf was mapped through: region index + 1. 0 marks leaves the kernel did
/// not make (the boot image loader's), which no system call may remove. At most
/// [`MAX_MEMS`](crate::config::MAX_MEMS) (x86_64 keeps it in the ten software bits of a
/// page-table entry).
pub type MapTag = u16;

pub use abi::PageAttrs;

/// A present user leaf of a page table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Leaf {
    /// The physical page.
    pub phys: PhysAddr,
    /// How it is mapped.
    pub attrs: PageAttrs,
    /// The region it was mapped through (0: not the kernel's).
    pub tag: MapTag,
}

/// What [`Hal::sweep`] does with one leaf.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SweepAction {
    /// Leave it.
    Keep,
    /// Remove it (as [`Hal::unmap_page`]).
    Remove,
    /// Keep it, now tagged with this tag (a merge of regions).
    Retag(MapTag),
}

/// Why [`Hal::prepare_map`] refused to prepare a mapping. Either way nothing observable
/// changed and the kernel fails the system call.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum MapPrepError {
    /// No memory is left for the page tables the mapping needs.
    OutOfMemory,
    /// Something the kernel's mapping tables do not record (the boot loader's image or stack
    /// pages, a large page) already maps the address, or covers it.
    Occupied,
}

/// The operations the kernel needs from the platform. Implemented by the x86 HAL (a thin
/// forwarding `impl` over `X86Hal`), later the ARMv7 HAL, and the hosted fake HAL of the tests.
///
/// Every method is called on the core it concerns (`cpu` is passed so that a hosted HAL can
/// keep per-core logs; a real HAL may ignore it).
pub trait Hal: Sync {
    /// Whether the IPC fastpath keeps its endpoint lock to the end of its section, to release
    /// it together with the section ([`Strategy::exit_releasing`](crate::strategy::Strategy):
    /// under the fine-grained strategy one barrier for both releases). Worth it where a
    /// release costs a barrier instruction (ARMv7's `dmb ish`: 4 instructions per round trip
    /// fewer); where releases are plain stores (x86_64) it only keeps the lock's address live
    /// through the exit's bookkeeping (5 instructions more per round trip), so the default is
    /// `false`: the fastpath releases the lock when its commit is done.
    const MERGE_RELEASES: bool = false;
    /// Index of the calling core.
    fn cpu_id(&self) -> CpuId;
    /// Cores online.
    fn cpu_count(&self) -> usize;
    /// Sends an IPI of `kind` from `cpu` to `target` (fire-and-forget).
    fn send_ipi(&self, cpu: CpuId, target: CpuId, kind: IpiKind);
    /// Loads the page-table root `root` on `cpu`, for user mode: the kernel touches no user
    /// address after the switch, so a HAL may leave the last synchronisation to the return to
    /// user mode (ARMv7's exception return synchronises context, as an `isb` would).
    ///
    /// It may leave the translations of the address space it switched away from cached, tagged
    /// so that only a later load of that address space uses them (ARMv7 ASIDs; x86 without
    /// PCIDs drops them with the CR3 load anyway): the kernel keeps sending a core the TLB
    /// shoot-downs of every address space it loaded until the core flushed its whole TLB
    /// ([`flush_tlb`](Self::flush_tlb) with root 0), so a HAL with tagged TLB entries need not
    /// flush on a switch.
    ///
    /// # Safety
    /// `root` must be the root of an address space the kernel created; the kernel code and data
    /// must be mapped in it.
    unsafe fn switch_address_space(&self, cpu: CpuId, root: PhysAddr);
    /// Flushes `cpu`'s TLB entries for `vaddr` in `root`, or all of `root`'s for `None`; root 0
    /// with `None`: every entry of every address space (complete when it returns).
    fn flush_tlb(&self, cpu: CpuId, root: PhysAddr, vaddr: Option<usize>);
    /// Decode phase of a mapping: makes sure that a later [`Hal::map_page`] of `vaddr` in
    /// `root` cannot fail, by creating every intermediate page table it will need (empty tables
    /// are not an observable state change, so doing this in the decode phase keeps it free of
    /// side effects), and checks that nothing the kernel does not know about maps `vaddr`.
    ///
    /// The kernel calls it in its critical section, after every other check of the mapping
    /// (page-aligned `vaddr` below [`USER_TOP`](crate::config::USER_TOP), not in the kernel's
    /// mapping table of that address space), and calls `map_page` for the same `root` and
    /// `vaddr` in the same section if it returns `Ok`. Tables it created for a call that then
    /// does not map stay (empty) and are reused later.
    ///
    /// # Errors
    /// [`MapPrepError::OutOfMemory`] if a page table could not be allocated;
    /// [`MapPrepError::Occupied`] if `vaddr` is already mapped (or covered by a large page) by
    /// someone other than the kernel's mapping calls, such as the image loader.
    fn prepare_map(&self, root: PhysAddr, vaddr: usize) -> Result<(), MapPrepError>;
    /// Writes a user leaf (runs inside the critical section: plain stores only). Cannot fail:
    /// [`Hal::prepare_map`] succeeded for `root` and `vaddr` in the same section. `attrs` is
    /// [`PageAttrs::valid`]; `tag` is non-zero.
    fn map_page(
        &self,
        root: PhysAddr,
        vaddr: usize,
        frame: PhysAddr,
        attrs: PageAttrs,
        tag: MapTag,
    );
    /// The user leaf mapping `vaddr` in `root`, if any (the kernel's or the loader's).
    fn lookup(&self, root: PhysAddr, vaddr: usize) -> Option<Leaf>;
    /// Clears the user leaf at `vaddr` (runs inside the critical section: plain stores only).
    /// Page tables left empty are unlinked and *retired* for core `cpu`: they go back to the
    /// pool only at that core's next [`Hal::reclaim_tables`], after the kernel's TLB
    /// shoot-down of the address space completed.
    fn unmap_page(&self, cpu: CpuId, root: PhysAddr, vaddr: usize);
    /// Visits every user leaf of `root` and removes or retags it as `f` says (revoking or
    /// merging memory regions); empty tables are retired as by [`Hal::unmap_page`]. Returns
    /// how many leaves it removed. Runs inside the critical section (plain stores only).
    fn sweep(&self, cpu: CpuId, root: PhysAddr, f: &mut dyn FnMut(&Leaf) -> SweepAction) -> usize;
    /// Returns the page tables core `cpu` retired to the pool. The kernel calls it at the end
    /// of every entry of `cpu` that removed mappings, after its local TLB flush and after every
    /// other core that may cache the address space acknowledged its shoot-down.
    fn reclaim_tables(&self, cpu: CpuId);
    /// Page-table frames: `(free, total)` of the pool they come from (for `KernelInfo`).
    fn table_frames(&self) -> (usize, usize);
    /// Whether device interrupt line `irq` exists on this machine and may be handed to user
    /// space (`IssueIrqHandler`): never a line the kernel itself uses (timer, IPIs). Lines are
    /// numbered as the platform numbers its device interrupts: x86 global system interrupts
    /// (I/O APIC inputs), ARM GIC shared peripheral interrupts (INTID - 32). The default is
    /// none (a machine without device interrupts).
    fn irq_line_available(&self, irq: IrqId) -> bool {
        let _ = irq;
        false
    }
    /// Masks interrupt line `irq` at the interrupt controller. Runs after the critical
    /// section; may be called for a line already masked.
    fn mask_irq(&self, cpu: CpuId, irq: IrqId);
    /// Unmasks (acknowledges) interrupt line `irq`. Runs after the critical section.
    fn unmask_irq(&self, cpu: CpuId, irq: IrqId);
    /// Delivers line `irq` to core `target` from now on and unmasks it (`BindIrq`). Runs after
    /// the critical section. The HAL masks a line when its interrupt arrives, before it ends
    /// the interrupt at the controller, then calls [`Kernel::interrupt`](crate::Kernel::interrupt)
    /// (which queues no mask of its own); the line stays masked until the driver's `AckIrq`.
    /// The default unmasks only (a machine with one core or fixed routing).
    fn route_irq(&self, cpu: CpuId, irq: IrqId, target: CpuId) {
        let _ = target;
        self.unmask_irq(cpu, irq);
    }
    /// Sets the user context `thread` starts from the next time a core runs it: instruction
    /// pointer `pc`, stack pointer `sp`, `arg` in the first argument register, every other
    /// register zero (`WriteRegisters`). The kernel calls it in its critical section (plain
    /// stores only), only for a thread that is inactive and no core's current thread, so no
    /// core is running it or saving its context; the next core to run it picks it after this
    /// section. The default does nothing (a HAL whose threads only start from contexts set at
    /// boot).
    fn set_entry(&self, thread: ThreadId, pc: usize, sp: usize, arg: usize) {
        let _ = (thread, pc, sp, arg);
    }
    /// One iteration of a wait loop of `cpu` outside the critical section (waiting for TLB
    /// shoot-down acknowledgements). The default is a spin-loop hint; a hosted HAL may yield.
    fn relax(&self, cpu: CpuId) {
        let _ = cpu;
        core::hint::spin_loop();
    }
    /// The cycle counter.
    fn cycles(&self) -> u64;
    /// The cycle counter as kernel tracing reads it (the `trace` feature, four reads per
    /// entry): may skip the serialising fence `cycles` uses (x86 `lfence`), trading exactness at
    /// the instruction level for a cheaper read. The default is `cycles`.
    fn trace_cycles(&self) -> u64 {
        self.cycles()
    }
    /// Writes to the console.
    fn console_write(&self, s: &str);
}

/// An IRQ operation to run after the critical section.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IrqOp {
    /// Mask the line.
    Mask(IrqId),
    /// Unmask the line.
    Unmask(IrqId),
    /// Deliver the line to a core and unmask it.
    Route(IrqId, CpuId),
}

/// The hardware actions one kernel entry of one core decided on, run after the critical
/// section. Fixed size: IPIs are a kind set per target core, so it cannot overflow.
///
/// The IPC path decides on an address-space switch at most; everything else (IPIs, a TLB
/// flush, an IRQ operation, shoot-down acknowledgements, page-table reclaim) is rare. `more`
/// says whether any of the rare ones was recorded, so that [`Actions::clear`],
/// [`Actions::run`] and [`Actions::rare`] cost one test in the common case. Two bit masks
/// summarise the per-core arrays (`ipi_targets`, `ack_targets`), so that the rare path, too,
/// touches only the entries they name. Every field but `switch_to` is written only through
/// the methods here, which keep `more` and the masks right.
#[derive(Clone, Copy, Debug, Default)]
pub struct Actions {
    /// Whether anything but `switch_to` was recorded.
    more: bool,
    /// IPI kinds (bits of [`IpiKind::bit`]) to send to each core.
    ipis: [u8; MAX_CPUS],
    /// Bit `c` set iff `ipis[c] != 0`.
    ipi_targets: u32,
    /// Address space to load on this core.
    pub switch_to: Option<PhysAddr>,
    /// TLB flush of this core: `(root, Some(vaddr))` for one page, `None` for everything.
    flush: Option<(PhysAddr, Option<usize>)>,
    /// At most one IRQ operation per entry.
    irq: Option<IrqOp>,
    /// Whether this entry removed mappings: the HAL reclaims the page tables it emptied once
    /// the shoot-down is complete ([`Hal::reclaim_tables`]).
    reclaim: bool,
    /// TLB shoot-down generations to wait for, per core (0: none): after running the other
    /// actions, the kernel waits until each core's acknowledged generation reached this one.
    acks: [TlbGeneration; MAX_CPUS],
    /// Bit `c` set iff `acks[c] != 0`.
    ack_targets: u32,
}

// The target masks have a bit per core.
const _: () = assert!(MAX_CPUS <= 32);

impl Actions {
    /// Nothing to do.
    pub const NONE: Actions = Actions {
        more: false,
        ipis: [0; MAX_CPUS],
        ipi_targets: 0,
        switch_to: None,
        flush: None,
        irq: None,
        reclaim: false,
        acks: [0; MAX_CPUS],
        ack_targets: 0,
    };

    /// Resets to [`Actions::NONE`]: one store and one test in the common case (nothing but a
    /// switch recorded); otherwise only the per-core entries that are set are cleared.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.switch_to = None;
        if self.more {
            self.clear_rare();
        }
    }

    #[inline(never)]
    fn clear_rare(&mut self) {
        for c in bits(self.ipi_targets) {
            self.ipis[c] = 0;
        }
        for c in bits(self.ack_targets) {
            self.acks[c] = 0;
        }
        self.ipi_targets = 0;
        self.ack_targets = 0;
        self.flush = None;
        self.irq = None;
        self.reclaim = false;
        self.more = false;
    }

    /// Whether nothing is recorded (the state between entries).
    #[inline(always)]
    pub fn is_clear(&self) -> bool {
        self.switch_to.is_none() && !self.more
    }

    /// Whether anything but an address-space switch was recorded.
    #[inline(always)]
    pub fn rare(&self) -> bool {
        self.more
    }

    /// Records an IRQ operation (at most one per entry; a second replaces the first).
    pub fn set_irq(&mut self, op: IrqOp) {
        self.irq = Some(op);
        self.more = true;
    }

    /// Records that this entry removed mappings (page tables to reclaim after the
    /// shoot-down).
    pub fn set_reclaim(&mut self) {
        self.reclaim = true;
        self.more = true;
    }

    /// Whether this entry removed mappings.
    pub fn reclaim(&self) -> bool {
        self.reclaim
    }

    /// Records a local TLB flush of `vaddr` (`None`: all) of `root`, merged with one already
    /// recorded in this entry: two pages of one root flush the root, two roots flush
    /// everything (root 0).
    pub fn flush_local(&mut self, root: PhysAddr, vaddr: Option<usize>) {
        self.more = true;
        self.flush = Some(match self.flush {
            None => (root, vaddr),
            Some(f) if f == (root, vaddr) => f,
            Some((r, _)) if r == root => (root, None),
            Some(_) => (0, None),
        });
    }

    /// Requests an IPI.
    pub fn ipi(&mut self, target: CpuId, kind: IpiKind) {
        if let Some(k) = self.ipis.get_mut(target) {
            *k |= kind.bit();
            self.ipi_targets |= 1 << target;
            self.more = true;
        }
    }

    /// IPI kinds (bits of [`IpiKind::bit`]) requested for core `target`.
    pub fn ipis(&self, target: CpuId) -> u8 {
        self.ipis.get(target).copied().unwrap_or(0)
    }

    /// Records that core `target` must acknowledge TLB shoot-down generation `gen` (non-zero)
    /// before this entry returns.
    pub fn ack(&mut self, target: CpuId, gen: TlbGeneration) {
        if let Some(g) = self.acks.get_mut(target) {
            *g = gen;
            if gen != 0 {
                self.ack_targets |= 1 << target;
                self.more = true;
            }
        }
    }

    /// The shoot-down generation core `target` must acknowledge (0: none).
    pub fn acks(&self, target: CpuId) -> TlbGeneration {
        self.acks.get(target).copied().unwrap_or(0)
    }

    /// Whether some core must acknowledge a shoot-down.
    pub fn awaits_acks(&self) -> bool {
        self.ack_targets != 0
    }

    /// Runs the actions on `cpu` through `hal`. The IPC path's case, nothing or only an
    /// address-space switch, is one test in line; everything else goes to `run_all`, out of
    /// line.
    #[inline(always)]
    pub fn run<H: Hal>(&self, hal: &H, cpu: CpuId) {
        if !self.more {
            if let Some(root) = self.switch_to {
                // SAFETY: as in `run_all`.
                unsafe { hal.switch_address_space(cpu, root) };
            }
            return;
        }
        self.run_all(hal, cpu);
    }

    /// Every action, in order: the IRQ operation, the TLB flush, the address-space switch,
    /// the IPIs.
    #[inline(never)]
    fn run_all<H: Hal>(&self, hal: &H, cpu: CpuId) {
        match self.irq {
            Some(IrqOp::Mask(irq)) => hal.mask_irq(cpu, irq),
            Some(IrqOp::Unmask(irq)) => hal.unmask_irq(cpu, irq),
            Some(IrqOp::Route(irq, target)) => hal.route_irq(cpu, irq, target),
            None => {}
        }
        if let Some((root, vaddr)) = self.flush {
            hal.flush_tlb(cpu, root, vaddr);
        }
        if let Some(root) = self.switch_to {
            // SAFETY: the kernel only records roots of address spaces it created (boot-time
            // `create_address_space`), as the HAL's contract requires.
            unsafe { hal.switch_address_space(cpu, root) };
        }
        for target in bits(self.ipi_targets) {
            let kinds = self.ipis[target];
            for kind in IpiKind::ALL {
                if kinds & kind.bit() != 0 {
                    hal.send_ipi(cpu, target, kind);
                }
            }
        }
    }
}

/// The indices of the set bits of `mask`, lowest first.
fn bits(mut mask: u32) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let c = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            c
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::IrqId;

    /// Every way of recording a rare action sets the summary flag, and `clear` then leaves a
    /// record equal to `NONE` in everything it shows; a switch alone stays on the common path.
    #[test]
    fn rare_actions_set_the_flag_and_clear_resets_them() {
        type Record = fn(&mut Actions);
        let record: [(&str, Record); 5] = [
            ("ipi", |a| a.ipi(1, IpiKind::Reschedule)),
            ("ack", |a| a.ack(2, 7)),
            ("flush", |a| a.flush_local(0x4000, Some(0x1000))),
            ("irq", |a| a.set_irq(IrqOp::Mask(IrqId::new(3).unwrap()))),
            ("reclaim", |a| a.set_reclaim()),
        ];
        for (what, f) in record {
            let mut a = Actions::NONE;
            a.switch_to = Some(0x8000);
            assert!(!a.rare(), "{what}: a switch alone is not rare");
            f(&mut a);
            assert!(a.rare(), "{what}: not flagged");
            a.clear();
            assert!(!a.rare(), "{what}: flag left set");
            assert_eq!(a.switch_to, None, "{what}");
            assert!(!a.reclaim() && !a.awaits_acks(), "{what}");
            assert_eq!((a.flush, a.irq), (None, None), "{what}");
            for c in 0..MAX_CPUS {
                assert_eq!((a.ipis(c), a.acks(c)), (0, 0), "{what}: core {c}");
            }
        }
        // Generation 0 means "nothing to wait for": not rare.
        let mut a = Actions::NONE;
        a.ack(1, 0);
        assert!(!a.rare() && !a.awaits_acks());
    }
}
