//! The two phases of a system call: [`Kernel::decode`] resolves capabilities and checks every
//! precondition without changing any state (it may fail; the error goes back to the caller),
//! then [`Kernel::execute`] performs the operation and cannot fail. Because execution cannot
//! fail, the hardware actions it records can safely run after the critical section.
//!
//! Under the fine-grained strategy, what decode checked stays true during execute: object
//! existence, CSpaces, configuration and mapping tables only change in exclusive sections, and
//! the caller's own reply slot only changes through the caller itself.

use kernel_locks::CpuId;

use crate::cap::{Cap, ObjKind, ObjRef, Rights};
use crate::config::*;
use crate::error::Error;
use crate::hal::{Hal, IrqOp, MapPrepError, MapTag, PageAttrs, PhysAddr, TlbGeneration};
use crate::ids::*;
use crate::kernel::{Ctx, IrqState, Kernel, ThreadState};
use crate::strategy::Strategy;
use crate::syscall::{err_regs, ok_regs, MintTarget, Msg, Syscall};

/// Reads of the cycle counter a [`KernelBusy`](Syscall::KernelBusy) of `n` ticks makes at most
/// (`n` × this): the loop's bound when the counter does not advance. Generous, since a tick of a
/// slow counter (ARM's generic timer: 62.5 MHz under QEMU) spans many reads.
#[cfg(feature = "trace")]
const BUSY_SPINS_PER_TICK: u64 = 4096;

/// A decoded, fully validated operation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Send {
        ep: EndpointId,
        badge: usize,
        msg: Msg,
        call: bool,
        block: bool,
    },
    Recv {
        ep: EndpointId,
        reply: Option<Msg>,
    },
    Reply {
        msg: Msg,
    },
    Signal {
        ntfn: NotificationId,
        badge: usize,
    },
    Wait {
        ntfn: NotificationId,
    },
    Yield,
    AckIrq {
        irq: IrqId,
    },
    CreateThread {
        new: ThreadId,
        dest: CapSlot,
        aspace: AsId,
        priority: usize,
        core: CpuId,
    },
    SetPriority {
        t: ThreadId,
        priority: usize,
    },
    SetAffinity {
        t: ThreadId,
        core: CpuId,
    },
    BindPager {
        t: ThreadId,
        ep: EndpointId,
        badge: usize,
    },
    Map {
        root: PhysAddr,
        vaddr: usize,
        phys: PhysAddr,
        attrs: PageAttrs,
        tag: MapTag,
    },
    Unmap {
        aspace: AsId,
        vaddr: usize,
    },
    MemSplit {
        parent: MemId,
        new: MemId,
        cap: Cap,
        dest: CapSlot,
        offset: usize,
        pages: usize,
    },
    MemMerge {
        a: MemId,
        b: MemId,
    },
    MemRevoke {
        mem: MemId,
    },
    MemInfo {
        mem: MemId,
    },
    CreateEndpoint {
        new: EndpointId,
        dest: CapSlot,
    },
    CreateNotification {
        new: NotificationId,
        dest: CapSlot,
    },
    KernelInfo {
        key: usize,
    },
    IssueIrqHandler {
        irq: IrqId,
        dest: CapSlot,
    },
    BindIrq {
        irq: IrqId,
        ntfn: NotificationId,
        badge: usize,
        core: CpuId,
    },
    Resume {
        t: ThreadId,
    },
    Suspend {
        t: ThreadId,
    },
    Delete {
        t: ThreadId,
    },
    Mint {
        target: ThreadId,
        dest: CapSlot,
        cap: Cap,
    },
    CapDelete {
        slot: CapSlot,
    },
    DeleteAddressSpace {
        aspace: AsId,
    },
    Null,
    #[cfg(feature = "trace")]
    Busy {
        cycles: u64,
    },
    // `KernelCounters`: kernels with the `trace` feature only.
    #[cfg(feature = "trace")]
    ZeroCounters,
    #[cfg(feature = "trace")]
    ReadCounters {
        core: CpuId,
    },
    CreateAddressSpace {
        new: AsId,
        dest: CapSlot,
    },
    WriteRegisters {
        t: ThreadId,
        pc: usize,
        sp: usize,
        arg: usize,
    },
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    pub(crate) fn lookup_ep(
        &self,
        t: ThreadId,
        slot: CapSlot,
        rights: Rights,
    ) -> Result<(EndpointId, usize), Error> {
        let cap = self.lookup(t, slot, ObjKind::Endpoint, rights)?;
        match cap.obj {
            ObjRef::Endpoint(e) => Ok((e, cap.badge)),
            _ => Err(Error::WrongType),
        }
    }

    fn lookup_ntfn(
        &self,
        t: ThreadId,
        slot: CapSlot,
        rights: Rights,
    ) -> Result<(NotificationId, usize), Error> {
        let cap = self.lookup(t, slot, ObjKind::Notification, rights)?;
        match cap.obj {
            ObjRef::Notification(n) => Ok((n, cap.badge)),
            _ => Err(Error::WrongType),
        }
    }

    fn lookup_thread(&self, t: ThreadId, slot: CapSlot) -> Result<ThreadId, Error> {
        match self.lookup(t, slot, ObjKind::Thread, Rights::MANAGE)?.obj {
            ObjRef::Thread(x) => Ok(x),
            _ => Err(Error::WrongType),
        }
    }

    fn lookup_as(&self, t: ThreadId, slot: CapSlot) -> Result<AsId, Error> {
        match self
            .lookup(t, slot, ObjKind::AddressSpace, Rights::WRITE)?
            .obj
        {
            ObjRef::AddressSpace(a) => Ok(a),
            _ => Err(Error::WrongType),
        }
    }

    fn lookup_irq(&self, t: ThreadId, slot: CapSlot, rights: Rights) -> Result<IrqId, Error> {
        match self.lookup(t, slot, ObjKind::IrqHandler, rights)?.obj {
            ObjRef::IrqHandler(i) => Ok(i),
            _ => Err(Error::WrongType),
        }
    }

    fn check_core(&self, core: usize) -> Result<CpuId, Error> {
        if core < self.cores {
            Ok(core)
        } else {
            Err(Error::InvalidCore)
        }
    }

    /// Phase one: resolve and validate; no state changes.
    pub(crate) fn decode(&self, ctx: Ctx, t: ThreadId, sc: Syscall) -> Result<Op, Error> {
        Ok(match sc {
            Syscall::Call { ep, msg } | Syscall::Send { ep, msg } | Syscall::NBSend { ep, msg } => {
                let (ep, badge) = self.lookup_ep(t, ep, Rights::WRITE)?;
                let call = matches!(sc, Syscall::Call { .. });
                let block = !matches!(sc, Syscall::NBSend { .. });
                Op::Send {
                    ep,
                    badge,
                    msg,
                    call,
                    block,
                }
            }
            Syscall::Recv { ep } => Op::Recv {
                ep: self.lookup_ep(t, ep, Rights::READ)?.0,
                reply: None,
            },
            Syscall::ReplyRecv { ep, msg } => Op::Recv {
                ep: self.lookup_ep(t, ep, Rights::READ)?.0,
                reply: Some(msg),
            },
            Syscall::Reply { msg } => {
                if self.ipc(&self.hold(ctx, t), |i| i.reply_to).is_none() {
                    return Err(Error::NoReply);
                }
                Op::Reply { msg }
            }
            Syscall::Signal { ntfn } => {
                let (ntfn, badge) = self.lookup_ntfn(t, ntfn, Rights::WRITE)?;
                Op::Signal { ntfn, badge }
            }
            Syscall::Wait { ntfn } => Op::Wait {
                ntfn: self.lookup_ntfn(t, ntfn, Rights::READ)?.0,
            },
            Syscall::Yield => Op::Yield,
            Syscall::AckIrq { handler } => Op::AckIrq {
                irq: self.lookup_irq(t, handler, Rights::WRITE)?,
            },
            Syscall::CreateThread {
                control,
                dest,
                aspace,
                priority,
                core,
            } => {
                self.lookup(t, control, ObjKind::Control, Rights::MANAGE)?;
                let aspace = self.lookup_as(t, aspace)?;
                let core = self.check_core(core)?;
                if self.cap(t, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                let new = self.free_tcb(ctx).ok_or(Error::NoFreeObject)?;
                Op::CreateThread {
                    new,
                    dest,
                    aspace,
                    priority,
                    core,
                }
            }
            Syscall::SetPriority { thread, priority } => Op::SetPriority {
                t: self.lookup_thread(t, thread)?,
                priority,
            },
            Syscall::SetAffinity { thread, core } => {
                let target = self.lookup_thread(t, thread)?;
                Op::SetAffinity {
                    t: target,
                    core: self.check_core(core)?,
                }
            }
            Syscall::BindPager { thread, ep } => {
                let target = self.lookup_thread(t, thread)?;
                let (ep, badge) = self.lookup_ep(t, ep, Rights::WRITE)?;
                Op::BindPager {
                    t: target,
                    ep,
                    badge,
                }
            }
            Syscall::MapPage {
                aspace,
                mem,
                vaddr,
                attrs,
                offset,
            } => {
                let a = self.lookup_as(t, aspace)?;
                let (phys, tag) = self.check_map(t, mem, offset, attrs)?;
                let root = self.aspace(a, |s| s.root);
                if self.hal.lookup(root, vaddr).is_some() {
                    return Err(Error::AlreadyMapped);
                }
                // Last check: it may create (empty) page tables, so that `map_page` in the
                // execute phase cannot fail.
                self.hal.prepare_map(root, vaddr).map_err(|e| match e {
                    MapPrepError::OutOfMemory => Error::OutOfMemory,
                    MapPrepError::Occupied => Error::AlreadyMapped,
                })?;
                Op::Map {
                    root,
                    vaddr,
                    phys,
                    attrs,
                    tag,
                }
            }
            Syscall::UnmapPage { aspace, vaddr } => {
                let a = self.lookup_as(t, aspace)?;
                let root = self.aspace(a, |s| s.root);
                // Leaves with tag 0 are the image loader's: not the caller's to remove.
                match self.hal.lookup(root, vaddr) {
                    Some(leaf) if leaf.tag != 0 => Op::Unmap { aspace: a, vaddr },
                    _ => return Err(Error::NotMapped),
                }
            }
            Syscall::MemSplit {
                mem,
                dest,
                offset,
                pages,
            } => {
                let cap = self.lookup(t, mem, ObjKind::Memory, Rights::MANAGE)?;
                let (parent, r) = self.lookup_mem(t, mem, Rights::MANAGE)?;
                let end = offset.checked_add(pages).ok_or(Error::OutOfRange)?;
                if end > r.pages {
                    return Err(Error::OutOfRange);
                }
                let page = PAGE_SIZE as PhysAddr;
                let base = r.base + offset as PhysAddr * page;
                if self.child_overlaps(parent, base, base + pages as PhysAddr * page) {
                    return Err(Error::Overlap);
                }
                if self.cap(t, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                let new = self.free_region().ok_or(Error::NoFreeObject)?;
                Op::MemSplit {
                    parent,
                    new,
                    cap,
                    dest,
                    offset,
                    pages,
                }
            }
            Syscall::MemMerge { a, b } => {
                let (ma, ra) = self.lookup_mem(t, a, Rights::MANAGE)?;
                let (mb, rb) = self.lookup_mem(t, b, Rights::MANAGE)?;
                if ma == mb || ra.parent != rb.parent || ra.kind != rb.kind || ra.end() != rb.base {
                    return Err(Error::InvalidArgument);
                }
                if self.has_children(mb) {
                    return Err(Error::InUse);
                }
                Op::MemMerge { a: ma, b: mb }
            }
            Syscall::MemRevoke { mem } => Op::MemRevoke {
                mem: self.lookup_mem(t, mem, Rights::MANAGE)?.0,
            },
            Syscall::MemInfo { mem } => Op::MemInfo {
                mem: self.lookup_mem(t, mem, Rights::READ)?.0,
            },
            Syscall::CreateEndpoint { control, dest } => {
                self.lookup(t, control, ObjKind::Control, Rights::MANAGE)?;
                if self.cap(t, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                let new = EndpointId::new(self.meta(|m| m.n_eps)).ok_or(Error::NoFreeObject)?;
                Op::CreateEndpoint { new, dest }
            }
            Syscall::CreateNotification { control, dest } => {
                self.lookup(t, control, ObjKind::Control, Rights::MANAGE)?;
                if self.cap(t, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                let new =
                    NotificationId::new(self.meta(|m| m.n_ntfns)).ok_or(Error::NoFreeObject)?;
                Op::CreateNotification { new, dest }
            }
            Syscall::KernelInfo { key } => Op::KernelInfo { key },
            Syscall::Null => Op::Null,
            // Decode bounded it by `BUSY_MAX_CYCLES`, which fits every `u64`.
            #[cfg(feature = "trace")]
            Syscall::KernelBusy { cycles } => Op::Busy {
                cycles: cycles as u64,
            },
            // The busy loop (which holds the kernel lock, a way for any thread to stall the
            // others for milliseconds) and the counters are in kernels built with the `trace`
            // feature only, the ones made for measuring.
            #[cfg(not(feature = "trace"))]
            Syscall::KernelBusy { .. } | Syscall::KernelCounters { .. } => {
                return Err(Error::UnknownSyscall)
            }
            #[cfg(feature = "trace")]
            Syscall::KernelCounters { op, core } => {
                if op == crate::syscall::counters::ZERO {
                    Op::ZeroCounters
                } else {
                    Op::ReadCounters {
                        core: self.check_core(core)?,
                    }
                }
            }
            Syscall::IssueIrqHandler { control, irq, dest } => {
                self.lookup(t, control, ObjKind::Control, Rights::MANAGE)?;
                let irq = IrqId::new(irq).ok_or(Error::IrqUnavailable)?;
                // A tick line exists for every core the kernel runs; the HAL knows the rest.
                let available = match irq.tick_core() {
                    Some(core) => core < self.cores,
                    None => self.hal.irq_line_available(irq),
                };
                if !available {
                    return Err(Error::IrqUnavailable);
                }
                if self.cap(t, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                if self.irq(&self.hold(ctx, irq), |s| s.issued) {
                    return Err(Error::InUse);
                }
                Op::IssueIrqHandler { irq, dest }
            }
            Syscall::BindIrq {
                handler,
                ntfn,
                core,
            } => {
                let irq = self.lookup_irq(t, handler, Rights::MANAGE)?;
                let (ntfn, badge) = self.lookup_ntfn(t, ntfn, Rights::WRITE)?;
                let core = self.check_core(core)?;
                // A core's ticks are delivered on that core (no routing).
                if irq.tick_core().is_some_and(|c| c != core) {
                    return Err(Error::InvalidArgument);
                }
                if self.irq(&self.hold(ctx, irq), |s| s.bound).is_some() {
                    return Err(Error::AlreadyBound);
                }
                Op::BindIrq {
                    irq,
                    ntfn,
                    badge,
                    core,
                }
            }
            Syscall::Resume { thread } => {
                let target = self.lookup_thread(t, thread)?;
                // A thread made by CreateThread has no registers until WriteRegisters.
                if !self.conf(target).has_entry {
                    return Err(Error::InvalidArgument);
                }
                Op::Resume { t: target }
            }
            Syscall::Suspend { thread } => Op::Suspend {
                t: self.lookup_thread(t, thread)?,
            },
            Syscall::DeleteThread { thread } => Op::Delete {
                t: self.lookup_thread(t, thread)?,
            },
            Syscall::Mint {
                src,
                target,
                dest,
                rights,
                badge,
            } => {
                let cap = self.cap(t, src)?;
                if !cap.rights.contains(Rights::GRANT) {
                    return Err(Error::MissingRight);
                }
                if !cap.rights.contains(rights) {
                    return Err(Error::MissingRight);
                }
                if cap.badge != 0 && badge != 0 && badge != cap.badge {
                    return Err(Error::InvalidArgument);
                }
                let target = match target {
                    MintTarget::Own => t,
                    MintTarget::Thread(slot) => self.lookup_thread(t, slot)?,
                };
                if self.cap(target, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                let badge = if badge == 0 { cap.badge } else { badge };
                Op::Mint {
                    target,
                    dest,
                    cap: Cap {
                        obj: cap.obj,
                        rights,
                        badge,
                    },
                }
            }
            Syscall::CapDelete { slot } => {
                self.cap(t, slot)?;
                Op::CapDelete { slot }
            }
            Syscall::DeleteAddressSpace { aspace } => {
                let a = match self
                    .lookup(t, aspace, ObjKind::AddressSpace, Rights::MANAGE)?
                    .obj
                {
                    ObjRef::AddressSpace(a) => a,
                    _ => return Err(Error::WrongType),
                };
                if self.aspace_in_use(a) {
                    return Err(Error::InUse);
                }
                Op::DeleteAddressSpace { aspace: a }
            }
            Syscall::WriteRegisters {
                thread,
                pc,
                sp,
                arg,
            } => {
                let target = self.lookup_thread(t, thread)?;
                let inactive =
                    self.ipc(&self.hold(ctx, target), |i| i.state) == ThreadState::Inactive;
                if !inactive || self.current_anywhere(ctx, target).is_some() {
                    return Err(Error::InUse);
                }
                Op::WriteRegisters {
                    t: target,
                    pc,
                    sp,
                    arg,
                }
            }
            Syscall::CreateAddressSpace { control, dest } => {
                self.lookup(t, control, ObjKind::Control, Rights::MANAGE)?;
                if self.cap(t, dest).is_ok() {
                    return Err(Error::SlotOccupied);
                }
                let new = self.reusable_aspace(ctx).ok_or(Error::NoFreeObject)?;
                Op::CreateAddressSpace { new, dest }
            }
        })
    }

    /// Phase two: perform the operation (cannot fail). Returns whether to rotate the run queue.
    pub(crate) fn execute(&self, ctx: Ctx, t: ThreadId, op: Op) -> bool {
        let ok = ok_regs(0, [0; MSG_WORDS]);
        match op {
            Op::Send {
                ep,
                badge,
                msg,
                call,
                block,
            } => self.send(ctx, t, ep, badge, msg, call, block, false),
            Op::Recv { ep, reply } => {
                // ReplyRecv answers the caller; Recv drops a reply capability still held.
                self.reply(ctx, t, reply.ok_or(Error::ReplyDropped));
                self.recv(ctx, t, ep);
            }
            Op::Reply { msg } => {
                self.reply(ctx, t, Ok(msg));
                self.set_ret(ctx, t, ok);
            }
            Op::Signal { ntfn, badge } => {
                self.signal(ctx, ntfn, badge);
                self.set_ret(ctx, t, ok);
            }
            Op::Wait { ntfn } => self.wait(ctx, t, ntfn),
            Op::Yield => {
                self.set_ret(ctx, t, ok);
                return true;
            }
            Op::AckIrq { irq } => {
                {
                    let g = self.hold(ctx, irq);
                    if self.irq(&g, |s| core::mem::replace(&mut s.masked, false)) {
                        self.irq_op(ctx, IrqOp::Unmask(irq));
                    }
                }
                self.set_ret(ctx, t, ok);
            }
            Op::CreateThread {
                new,
                dest,
                aspace,
                priority,
                core,
            } => {
                self.init_tcb(ctx, new, priority, core, Some(aspace));
                self.put_cap(
                    ctx,
                    t,
                    dest,
                    Cap {
                        obj: ObjRef::Thread(new),
                        rights: Rights::ALL,
                        badge: 0,
                    },
                );
                self.set_ret(ctx, t, ok_regs(new.index(), [0; MSG_WORDS]));
            }
            Op::SetPriority {
                t: target,
                priority,
            } => {
                self.set_priority(ctx, target, priority);
                self.set_ret(ctx, t, ok);
            }
            Op::SetAffinity { t: target, core } => {
                self.set_affinity(ctx, target, core);
                self.set_ret(ctx, t, ok);
            }
            Op::BindPager {
                t: target,
                ep,
                badge,
            } => {
                self.conf_mut(ctx, target, |c| c.pager = Some((ep, badge)));
                self.set_ret(ctx, t, ok);
            }
            Op::Map {
                root,
                vaddr,
                phys,
                attrs,
                tag,
            } => {
                self.hal.map_page(root, vaddr, phys, attrs, tag);
                self.set_ret(ctx, t, ok);
            }
            Op::Unmap { aspace, vaddr } => {
                self.unmap(ctx, aspace, vaddr);
                self.set_ret(ctx, t, ok);
            }
            Op::MemSplit {
                parent,
                new,
                cap,
                dest,
                offset,
                pages,
            } => {
                self.split_region(ctx, parent, new, offset, pages);
                self.put_cap(ctx, t, dest, Self::child_cap(new, cap));
                self.set_ret(ctx, t, ok_regs(new.index(), [0; MSG_WORDS]));
            }
            Op::MemMerge { a, b } => {
                // Set first: the merge may remove capabilities of the caller, never the caller.
                self.set_ret(ctx, t, ok);
                self.merge_regions(ctx, a, b);
            }
            Op::MemRevoke { mem } => {
                self.set_ret(ctx, t, ok);
                self.destroy_regions(ctx, self.subtree(mem, false));
            }
            Op::MemInfo { mem } => {
                let r = self.region(mem);
                let msg = [r.pages, r.kind as usize, mem.index(), 0];
                self.set_ret(ctx, t, ok_regs(r.base as usize, msg));
            }
            Op::CreateEndpoint { new, dest } => {
                self.meta_mut(ctx, |m| m.n_eps += 1);
                self.put_cap(ctx, t, dest, Self::full_cap(ObjRef::Endpoint(new)));
                self.set_ret(ctx, t, ok_regs(new.index(), [0; MSG_WORDS]));
            }
            Op::CreateNotification { new, dest } => {
                self.meta_mut(ctx, |m| m.n_ntfns += 1);
                self.put_cap(ctx, t, dest, Self::full_cap(ObjRef::Notification(new)));
                self.set_ret(ctx, t, ok_regs(new.index(), [0; MSG_WORDS]));
            }
            Op::KernelInfo { key } => {
                let v = self.kernel_info(key);
                self.set_ret(ctx, t, ok_regs(v, [0; MSG_WORDS]));
            }
            Op::Null => self.set_ret(ctx, t, ok),
            #[cfg(feature = "trace")]
            Op::Busy { cycles } => {
                let spun = self.busy(cycles);
                self.set_ret(ctx, t, ok_regs(spun as usize, [0; MSG_WORDS]));
            }
            #[cfg(feature = "trace")]
            Op::ZeroCounters => {
                self.zero_counters();
                self.set_ret(ctx, t, ok);
            }
            #[cfg(feature = "trace")]
            Op::ReadCounters { core } => {
                let (entries, cycles, all) = self.read_counters(core);
                self.set_ret(ctx, t, ok_regs(entries, [cycles, all, 0, 0]));
            }
            Op::IssueIrqHandler { irq, dest } => {
                self.irq(&self.hold(ctx, irq), |s| s.issued = true);
                self.put_cap(ctx, t, dest, Self::full_cap(ObjRef::IrqHandler(irq)));
                self.set_ret(ctx, t, ok);
            }
            Op::BindIrq {
                irq,
                ntfn,
                badge,
                core,
            } => {
                self.irq(&self.hold(ctx, irq), |s| {
                    s.bound = Some((ntfn, badge));
                    s.masked = false;
                });
                self.irq_op(ctx, IrqOp::Route(irq, core));
                self.set_ret(ctx, t, ok);
            }
            Op::Resume { t: target } => {
                self.resume(ctx, target);
                self.set_ret(ctx, t, ok);
            }
            Op::Suspend { t: target } => {
                // Set the result first: suspending oneself must not overwrite `Interrupted`.
                self.set_ret(ctx, t, ok);
                self.suspend(ctx, target);
            }
            Op::Delete { t: target } => {
                self.set_ret(ctx, t, ok);
                self.delete(ctx, target);
            }
            Op::Mint { target, dest, cap } => {
                self.put_cap(ctx, target, dest, cap);
                self.set_ret(ctx, t, ok);
            }
            Op::CapDelete { slot } => {
                self.take_cap(ctx, t, slot);
                self.set_ret(ctx, t, ok);
            }
            Op::DeleteAddressSpace { aspace } => {
                self.delete_aspace(ctx, aspace);
                self.set_ret(ctx, t, ok);
            }
            Op::WriteRegisters {
                t: target,
                pc,
                sp,
                arg,
            } => {
                self.hal.set_entry(target, pc, sp, arg);
                self.conf_mut(ctx, target, |c| c.has_entry = true);
                self.ipc(&self.hold(ctx, target), |i| i.ret = [0; 6]);
                self.set_ret(ctx, t, ok);
            }
            Op::CreateAddressSpace { new, dest } => {
                self.revive_aspace(ctx, new);
                self.put_cap(
                    ctx,
                    t,
                    dest,
                    Cap {
                        obj: ObjRef::AddressSpace(new),
                        rights: Rights::ALL,
                        badge: 0,
                    },
                );
                self.set_ret(ctx, t, ok_regs(new.index(), [0; MSG_WORDS]));
            }
        }
        false
    }

    // ---------------------------------------------------------------------------------------
    // IPC. Lock order: endpoint/notification/IRQ, then TCBs by index, then one run queue.
    // ---------------------------------------------------------------------------------------

    /// Send or Call from `s` (also a page fault, `fault`). With a waiting receiver the message
    /// is transferred at once; otherwise `s` blocks (or, non-blocking, the message is dropped).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send(
        &self,
        ctx: Ctx,
        s: ThreadId,
        ep: EndpointId,
        badge: usize,
        msg: Msg,
        call: bool,
        block: bool,
        fault: bool,
    ) {
        let ge = self.hold(ctx, ep);
        let (mut q, receivers) = self.ep(&ge, |e| (e.queue, e.receivers));
        match q.head {
            Some(r) if receivers => {
                let gt = self.hold2(ctx, s, r);
                self.q_remove(&self.qlinks, &mut q, r);
                self.ep(&ge, |e| e.queue = q);
                self.ipc(gt.of(r), |i| {
                    i.ret = ok_regs(badge, msg);
                    i.state = ThreadState::Runnable;
                    if call {
                        i.reply_to = Some(s);
                    }
                });
                self.ipc(gt.of(s), |i| {
                    if call {
                        i.state = ThreadState::BlockedReply;
                        i.server = Some(r);
                        i.fault = fault;
                    } else {
                        i.ret = ok_regs(0, [0; MSG_WORDS]);
                    }
                });
                self.wake(ctx, r);
            }
            _ if block => {
                self.ipc(&self.hold(ctx, s), |i| {
                    i.state = ThreadState::BlockedSend(ep);
                    i.msg = msg;
                    i.badge = badge;
                    i.is_call = call;
                    i.fault = fault;
                });
                self.q_push(&self.qlinks, &mut q, s);
                self.ep(&ge, |e| {
                    e.queue = q;
                    e.receivers = false;
                });
            }
            _ => {
                self.ipc(&self.hold(ctx, s), |i| i.ret = ok_regs(0, [0; MSG_WORDS]));
            }
        }
    }

    /// Receive on `ep` by `r`, whose reply slot [`reply`](Self::reply) just emptied: nobody
    /// else fills it while `r` runs (only a transfer to `r` as a blocked receiver does), so
    /// it is still empty here.
    fn recv(&self, ctx: Ctx, r: ThreadId, ep: EndpointId) {
        let ge = self.hold(ctx, ep);
        let (mut q, receivers) = self.ep(&ge, |e| (e.queue, e.receivers));
        match q.head {
            Some(s) if !receivers => {
                let gt = self.hold2(ctx, r, s);
                self.q_remove(&self.qlinks, &mut q, s);
                self.ep(&ge, |e| e.queue = q);
                let (msg, badge, call) = self.ipc(gt.of(s), |i| (i.msg, i.badge, i.is_call));
                self.ipc(gt.of(r), |i| {
                    i.ret = ok_regs(badge, msg);
                    if call {
                        i.reply_to = Some(s);
                    }
                });
                if call {
                    self.ipc(gt.of(s), |i| {
                        i.state = ThreadState::BlockedReply;
                        i.server = Some(r);
                    });
                } else {
                    self.ipc(gt.of(s), |i| {
                        i.state = ThreadState::Runnable;
                        i.ret = ok_regs(0, [0; MSG_WORDS]);
                    });
                    self.wake(ctx, s);
                }
            }
            _ => {
                self.ipc(&self.hold(ctx, r), |i| {
                    i.state = ThreadState::BlockedRecv(ep)
                });
                self.q_push(&self.qlinks, &mut q, r);
                self.ep(&ge, |e| {
                    e.queue = q;
                    e.receivers = true;
                });
            }
        }
    }

    /// Consumes `r`'s reply capability (if any) and answers its caller with `result` (a
    /// message, or the error of a dropped reply).
    fn reply(&self, ctx: Ctx, r: ThreadId, result: Result<Msg, Error>) {
        let caller = { self.ipc(&self.hold(ctx, r), |i| i.reply_to) };
        if let Some(c) = caller {
            self.answer(ctx, r, c, result);
        }
    }

    /// Clears `r`'s reply slot (naming `c`) and resumes `c` with `result` if it still waits for
    /// `r`. A page-fault caller resumes with its registers untouched.
    pub(crate) fn answer(&self, ctx: Ctx, r: ThreadId, c: ThreadId, result: Result<Msg, Error>) {
        let gt = self.hold2(ctx, r, c);
        self.ipc(gt.of(r), |i| i.reply_to = None);
        let waiting = self.ipc(gt.of(c), |i| {
            i.state == ThreadState::BlockedReply && i.server == Some(r)
        });
        if waiting {
            self.ipc(gt.of(c), |i| {
                if !i.fault {
                    i.ret = match result {
                        Ok(msg) => ok_regs(0, msg),
                        Err(e) => err_regs(e),
                    };
                }
                i.fault = false;
                i.server = None;
                i.state = ThreadState::Runnable;
            });
            self.wake(ctx, c);
        }
    }

    /// ORs `badge` (1 if 0) into the notification, or hands the word to the first waiter.
    pub(crate) fn signal(&self, ctx: Ctx, n: NotificationId, badge: usize) {
        let bits = if badge == 0 { 1 } else { badge };
        let gn = self.hold(ctx, n);
        let (mut q, word) = self.ntfn(&gn, |x| (x.waiters, x.word));
        match q.head {
            Some(w) => {
                let gt = self.hold(ctx, w);
                self.q_remove(&self.qlinks, &mut q, w);
                self.ntfn(&gn, |x| {
                    x.waiters = q;
                    x.word = 0;
                });
                self.ipc(&gt, |i| {
                    i.ret = ok_regs(word | bits, [0; MSG_WORDS]);
                    i.state = ThreadState::Runnable;
                });
                self.wake(ctx, w);
            }
            None => self.ntfn(&gn, |x| x.word |= bits),
        }
    }

    fn wait(&self, ctx: Ctx, w: ThreadId, n: NotificationId) {
        let gn = self.hold(ctx, n);
        let gt = self.hold(ctx, w);
        let (mut q, word) = self.ntfn(&gn, |x| (x.waiters, x.word));
        if word != 0 {
            self.ntfn(&gn, |x| x.word = 0);
            self.ipc(&gt, |i| i.ret = ok_regs(word, [0; MSG_WORDS]));
        } else {
            self.ipc(&gt, |i| i.state = ThreadState::BlockedNotification(n));
            self.q_push(&self.qlinks, &mut q, w);
            self.ntfn(&gn, |x| x.waiters = q);
        }
    }

    /// Interrupt: the line is masked until acknowledged, the bound notification signalled.
    ///
    /// The HAL masked the line at the controller before it entered the kernel, so no mask is
    /// queued here: queued, it would run after this section, and a driver on another core woken
    /// by the signal could acknowledge (unmask) first, leaving the line masked for good. A
    /// duplicate (an interrupt already in flight when the line was masked) signals again,
    /// which a driver sees as an interrupt with no work.
    pub(crate) fn handle_irq(&self, ctx: Ctx, irq: IrqId) {
        let bound = {
            self.irq(&self.hold(ctx, irq), |s| {
                s.masked = true;
                s.bound
            })
        };
        if let Some((n, badge)) = bound {
            self.signal(ctx, n, badge);
        }
    }

    /// A timer tick on this core: its tick line, if bound and unmasked (acknowledged since its
    /// last signal), is masked until the next `AckIrq` and signals its notification. One look
    /// under the line's lock; nothing for the interrupt controller.
    pub(crate) fn handle_tick(&self, ctx: Ctx) {
        let Some(tick) = IrqId::new(crate::config::TICK_IRQ_BASE + ctx.cpu) else {
            return;
        };
        let fire = self.irq(&self.hold(ctx, tick), |s| match s.bound {
            Some(b) if !s.masked => {
                s.masked = true;
                Some(b)
            }
            _ => None,
        });
        if let Some((n, badge)) = fire {
            self.signal(ctx, n, badge);
        }
    }

    /// Queues `op` for the interrupt controller, after the section. A tick line is the
    /// kernel's own (its masking is the `masked` flag alone), so nothing is queued for it.
    fn irq_op(&self, ctx: Ctx, op: IrqOp) {
        let (IrqOp::Mask(irq) | IrqOp::Unmask(irq) | IrqOp::Route(irq, _)) = op;
        if irq.tick_core().is_none() {
            self.act(ctx, |a| a.set_irq(op));
        }
    }

    /// The last capability to `irq`'s handler was deleted (exclusive section): the line is
    /// unbound, masked and may be issued again.
    pub(crate) fn irq_unreferenced(&self, ctx: Ctx, irq: IrqId) {
        if self.meta(|m| m.refs.irqs[irq.index()] != 0) {
            return;
        }
        self.irq(&self.hold(ctx, irq), |s| *s = IrqState::default());
        self.irq_op(ctx, IrqOp::Mask(irq));
    }

    /// Page fault or other exception (`msg` describes it): a Call to the pager, or suspension
    /// without one.
    pub(crate) fn handle_fault(&self, ctx: Ctx, t: ThreadId, msg: Msg) {
        match self.conf(t).pager {
            Some((ep, badge)) => {
                self.send(ctx, t, ep, badge, msg, true, true, true);
            }
            None => {
                self.ipc(&self.hold(ctx, t), |i| i.state = ThreadState::Inactive);
            }
        }
    }

    /// Removes a mapping: page table now, TLB flushes after the section (locally, and by a
    /// shoot-down with acknowledgement on every other core that may cache the address space:
    /// the call returns only once they all flushed, see `Kernel::await_shootdowns`), then the
    /// page tables the unmap emptied go back to the pool.
    pub(crate) fn unmap(&self, ctx: Ctx, a: AsId, vaddr: usize) {
        let root = self.aspace(a, |s| s.root);
        self.hal.unmap_page(ctx.cpu, root, vaddr);
        self.shoot_down(ctx, a, root, Some(vaddr));
        self.act(ctx, |x| x.set_reclaim());
    }

    /// A capability with every right and no badge, to a new object.
    pub(crate) fn full_cap(obj: ObjRef) -> Cap {
        Cap {
            obj,
            rights: Rights::ALL,
            badge: 0,
        }
    }

    /// The value of a [`KernelInfo`](Syscall::KernelInfo) key (decode checked it).
    fn kernel_info(&self, key: usize) -> usize {
        use crate::syscall::info::*;
        match key {
            TABLE_FRAMES_FREE => self.hal.table_frames().0,
            TABLE_FRAMES_TOTAL => self.hal.table_frames().1,
            FREE_REGIONS => self.meta(|m| m.regions.iter().filter(|r| !r.live).count()),
            FREE_ENDPOINTS => MAX_ENDPOINTS - self.meta(|m| m.n_eps),
            FREE_NOTIFICATIONS => MAX_NOTIFICATIONS - self.meta(|m| m.n_ntfns),
            // The low word on 32-bit machines (documented with the keys).
            CYCLES => self.hal.cycles() as usize,
            // Decode admitted only the keys above and the idle range.
            _ => key
                .checked_sub(IDLE_BASE)
                .map_or(0, |c| self.idle_cycles(c) as usize),
        }
    }

    /// The busy loop of [`KernelBusy`](Syscall::KernelBusy): spins until the HAL's cycle
    /// counter advanced `cycles` ticks and returns the ticks it advanced. A counter that does
    /// not advance (a HAL without one) cannot keep the kernel here forever: the loop also ends
    /// after `cycles` × [`BUSY_SPINS_PER_TICK`] reads of it.
    #[cfg(feature = "trace")]
    fn busy(&self, cycles: u64) -> u64 {
        let start = self.hal.cycles();
        let mut spins = cycles.saturating_mul(BUSY_SPINS_PER_TICK);
        loop {
            let spun = self.hal.cycles().wrapping_sub(start);
            if spun >= cycles || spins == 0 {
                return spun;
            }
            spins -= 1;
            core::hint::spin_loop();
        }
    }

    /// Zeroes the entry counters of every core ([`KernelCounters`](Syscall::KernelCounters)):
    /// records each core's current counts as its base.
    #[cfg(feature = "trace")]
    fn zero_counters(&self) {
        use core::sync::atomic::Ordering::Relaxed;
        for (c, b) in self.counts.iter().zip(&self.counts_base).take(self.cores) {
            // Relaxed: statistics; two zeroes at once each store a recent count, either is a
            // valid base.
            b.entries.store(c.entries.load(Relaxed), Relaxed);
            b.cycles.store(c.cycles.load(Relaxed), Relaxed);
        }
    }

    /// Core `core`'s entries and traced cycles since the last zero, and the entries of every
    /// core since then (each truncated to a word on 32-bit machines).
    #[cfg(feature = "trace")]
    fn read_counters(&self, core: CpuId) -> (usize, usize, usize) {
        use core::sync::atomic::Ordering::Relaxed;
        let since = |c: &core::sync::atomic::AtomicU64, b: &core::sync::atomic::AtomicU64| {
            c.load(Relaxed).wrapping_sub(b.load(Relaxed)) as usize
        };
        let (c, b) = (&self.counts[core], &self.counts_base[core]);
        let all = self
            .counts
            .iter()
            .zip(&self.counts_base)
            .take(self.cores)
            .fold(0usize, |n, (c, b)| {
                n.wrapping_add(since(&c.entries, &b.entries))
            });
        (
            since(&c.entries, &b.entries),
            since(&c.cycles, &b.cycles),
            all,
        )
    }

    /// TLB flush of `vaddr` (`None`: everything) of address space `a` on every core that may
    /// cache it: locally after the section, remotely by acknowledged shoot-down. Returns the
    /// generation each core must acknowledge (0: none).
    pub(crate) fn shoot_down(
        &self,
        ctx: Ctx,
        a: AsId,
        root: PhysAddr,
        vaddr: Option<usize>,
    ) -> [TlbGeneration; MAX_CPUS] {
        let cores = self.as_cores(a);
        let mut gens = [0; MAX_CPUS];
        for (c, g) in gens.iter_mut().enumerate().take(self.cores) {
            if cores & (1 << c) == 0 {
                continue;
            }
            if c == ctx.cpu {
                self.act(ctx, |x| x.flush_local(root, vaddr));
            } else {
                *g = self.request_shootdown(ctx, c);
            }
        }
        gens
    }
}
