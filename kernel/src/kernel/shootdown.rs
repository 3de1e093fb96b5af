//! TLB shoot-down with acknowledgement.
//!
//! Each core `c` has a requested generation `tlb_req[c]` and an acknowledged one
//! `tlb_ack[c]`. A core that removed mappings other cores may cache (in its critical
//! section, page-table stores first) bumps `tlb_req[c]` of each target, records the new
//! generation in its actions (`Actions::acks`) and a TlbShootdown IPI. After its section
//! (lock released or transaction committed) it sends the IPIs and spins until
//! `tlb_ack[c]` reached the generation for every target. Every kernel entry of every
//! core but the IPC fastpath's, after its section, *services* its own requests: if
//! `tlb_req != tlb_ack` it flushes its whole TLB and publishes the requested value it read
//! as `tlb_ack` (release). The waiting loop services too, so two cores shooting down each
//! other both progress, and no core waits inside a critical section, so the lock holder
//! never waits for a waiter. A target in user mode or idle takes the IPI and enters the
//! kernel (`Kernel::ipi`); a
//! target in the kernel services at the end of the entry it is in, or (the fastpath's) at
//! the entry the IPI causes right after it returns to user mode.
//!
//! Generations are words that wrap ([`TlbGeneration`]; 32 bits on ARMv7, where a 64-bit
//! atomic load is an `ldrexd` and a `clrex` on every entry). Only core `c` stores
//! `tlb_ack[c]`, and only values it read from `tlb_req[c]`, which only moves forward; each
//! requester has at most one request of `c` outstanding (it waits after its section), so
//! `tlb_req[c] - tlb_ack[c]` (wrapping) is small: the requests of the entries that wait for
//! them. Hence "pending" is `req != ack`, and "`ack` reached `g`" is "`g` is not a little
//! ahead of `ack`" (`reached`): exact for a waiter, which spins right after its section. A
//! deleted address space keeps its generations until its slot is reused, perhaps much
//! later; once acknowledged they read as acknowledged except while `ack` passes a window
//! of `MAX_UNACKED` values below them once per wrap (2^32 requests of one core on ARMv7),
//! which only delays the reuse. 0 means "nothing to wait for" in the actions, so
//! `request_shootdown` never hands it out.

use core::sync::atomic::Ordering;

use kernel_locks::CpuId;

use crate::config::*;
use crate::hal::{Hal, IpiKind, TlbGeneration};
use crate::ids::*;
use crate::strategy::Strategy;

use super::{cell_ref, Ctx, Kernel};

/// More than the shoot-down requests of one core that can be unacknowledged at once (a
/// requesting entry records its generations and waits for them right after its section; each
/// entry requests a few per core at most).
const MAX_UNACKED: TlbGeneration = 1 << 16;

/// Whether a core whose acknowledged generation is `ack` has acknowledged `g`: unless `g` is
/// at most [`MAX_UNACKED`] ahead of `ack` (wrapping). A generation kept for long (a deleted
/// address space's, checked at a later reuse) is then taken for unacknowledged only while the
/// counter passes a window of `MAX_UNACKED` values once per wrap, not for half of every wrap
/// as a signed serial-number comparison would (see the module doc).
#[inline(always)]
pub(crate) fn reached(ack: TlbGeneration, g: TlbGeneration) -> bool {
    !(1..=MAX_UNACKED).contains(&g.wrapping_sub(ack))
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// Requests a TLB shoot-down of core `c` from the calling core's section: the new
    /// generation is waited for after the section.
    pub(crate) fn request_shootdown(&self, ctx: Ctx, c: CpuId) -> TlbGeneration {
        let mut g = self.tlb_req[c]
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1);
        if g == 0 {
            // The counter wrapped onto the "none" value: take the next one (the target may
            // acknowledge 0 meanwhile, which does not reach 1 in serial order).
            g = self.tlb_req[c]
                .fetch_add(1, Ordering::AcqRel)
                .wrapping_add(1);
        }
        self.act(ctx, |a| {
            a.ack(c, g);
            a.ipi(c, IpiKind::TlbShootdown);
        });
        g
    }

    /// Whether core `cpu` has a TLB shoot-down to acknowledge (a HAL may use it to decide
    /// whether an idle core must enter the kernel).
    pub fn shootdown_pending(&self, cpu: CpuId) -> bool {
        self.tlb_req[cpu].load(Ordering::Acquire) != self.tlb_ack[cpu].load(Ordering::Relaxed)
    }

    /// Whether core `c` acknowledged generation `g` (0: nothing to wait for): its
    /// acknowledgement is not a little behind `g` ([`reached`]; see the module doc).
    pub(crate) fn acked(&self, c: CpuId, g: TlbGeneration) -> bool {
        g == 0 || reached(self.tlb_ack[c].load(Ordering::Acquire), g)
    }

    /// Flushes the calling core's TLB if another core requested it, and acknowledges
    /// (outside the critical section).
    ///
    /// The check is a Relaxed load, and the Acquire fence is taken only when a request is
    /// pending: with nothing to service, nothing read here needs ordering (every entry but
    /// the fastpath's checks; on ARMv7 an Acquire load is a `dmb ish`). The fence makes the load
    /// that saw `req` synchronise with the requester's AcqRel `fetch_add` (the fence rule of
    /// the C++ model), so the flush below is ordered after the requester's page-table stores,
    /// exactly as an Acquire load would. Freshness is not the load's business, Acquire or not:
    /// a request that is not seen yet is seen at the entry its IPI causes, or by the loop of
    /// `await_shootdowns`.
    #[inline(always)]
    pub(super) fn service_shootdown(&self, cpu: CpuId) {
        let req = self.tlb_req[cpu].load(Ordering::Relaxed);
        if req != self.tlb_ack[cpu].load(Ordering::Relaxed) {
            self.flush_and_ack(cpu, req);
        }
    }

    /// [`service_shootdown`](Self::service_shootdown) with a request pending: flushes this
    /// core's whole TLB, clears its flags of the address spaces it no longer caches, and
    /// acknowledges `req`.
    ///
    /// The whole TLB, not only the loaded address space's entries: switches keep the entries
    /// of the address space left (ARMv7 tags them with its ASID, and the HAL does not flush
    /// them: that is what lets two address spaces that take turns on a core, as in an IPC
    /// round trip, keep their translations), so this core may cache any address space whose
    /// flag it has set. After the flush it caches none but the loaded one (whose table the
    /// walker may read again at once), so it clears every other flag: later unmaps in those
    /// address spaces need not shoot it down.
    ///
    /// The flag stores are Relaxed, as the stores that set them: what a cleared flag promises
    /// an unmapper is about this core's TLB, not about memory. The HAL's flush returned only
    /// once it was complete (ARMv7 `dsb`, `isb`; x86 the CR3 reload), before these stores in
    /// program order; and this core cannot cache a cleared address space again before it
    /// loads it, which it does only in a later section that sets the flag again first (see
    /// `switch_aspace`). An unmapper that still reads a flag as set merely shoots down
    /// needlessly.
    #[cold]
    #[inline(never)]
    fn flush_and_ack(&self, cpu: CpuId, req: TlbGeneration) {
        // Pairs with the requester's AcqRel `fetch_add` (see `service_shootdown`).
        core::sync::atomic::fence(Ordering::Acquire);
        self.hal.flush_tlb(cpu, 0, None);
        // SAFETY: only core `cpu` touches its `local` cell and it runs one entry at a time
        // (HAL contract, see `begin`), so no other reference to it exists.
        let loaded = unsafe { cell_ref(&self.local[cpu], |l| l.loaded) };
        for (i, flag) in self.as_active[cpu].iter().enumerate() {
            if loaded.map(AsId::index) != Some(i) {
                flag.store(false, Ordering::Relaxed);
            }
        }
        self.tlb_ack[cpu].store(req, Ordering::Release);
    }

    /// The cores (bit per core) that may cache address space `a`: the shoot-down targets of
    /// an unmap in `a` (see [`as_active`](Self::as_active)).
    pub(crate) fn as_cores(&self, a: AsId) -> u64 {
        self.as_active
            .iter()
            .take(self.cores)
            .enumerate()
            .filter(|(_, row)| row[a.index()].load(Ordering::Acquire))
            .fold(0, |m, (c, _)| m | 1 << c)
    }

    /// After the section: services this core's own shoot-downs and waits until every core in
    /// `acks` acknowledged its generation.
    pub(super) fn await_shootdowns(&self, cpu: CpuId, acks: &[TlbGeneration; MAX_CPUS]) {
        loop {
            self.service_shootdown(cpu);
            if acks.iter().enumerate().all(|(c, &g)| self.acked(c, g)) {
                return;
            }
            self.hal.relax(cpu);
        }
    }
}
