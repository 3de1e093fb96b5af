//! Boot-time construction (exclusive through `&mut self`): threads, endpoints,
//! notifications, address spaces and capabilities before the cores run, and the TCB and
//! capability-slot helpers that the system calls share with it.

use kernel_locks::CpuId;

use crate::cap::{CSpace, Cap, ObjRef, Rights};
use crate::config::*;
use crate::error::Error;
use crate::hal::{Hal, PhysAddr};
use crate::ids::*;
use crate::strategy::Strategy;

use super::{AsLife, Ctx, Kernel, Life, Link, TcbConf, TcbIpc};

impl<S: Strategy, H: Hal> Kernel<S, H> {
    fn boot_ctx(&mut self) -> Ctx {
        Ctx {
            cpu: 0,
            excl: true,
            global: true,
            entry: false,
        }
    }

    /// Creates an inactive thread whose user context the boot code sets (through its HAL)
    /// before anything resumes it.
    pub fn create_thread(
        &mut self,
        priority: usize,
        core: CpuId,
        aspace: Option<AsId>,
    ) -> Result<ThreadId, Error> {
        let t = self.create_thread_without_entry(priority, core, aspace)?;
        let ctx = self.boot_ctx();
        self.conf_mut(ctx, t, |c| c.has_entry = true);
        Ok(t)
    }

    /// Creates an inactive thread with no user context, as the `CreateThread` system call
    /// does: `Resume` refuses it until `WriteRegisters` gives it one.
    pub fn create_thread_without_entry(
        &mut self,
        priority: usize,
        core: CpuId,
        aspace: Option<AsId>,
    ) -> Result<ThreadId, Error> {
        if priority >= NUM_PRIOS {
            return Err(Error::OutOfRange);
        }
        if core >= self.cores {
            return Err(Error::InvalidCore);
        }
        if aspace.is_some_and(|a| a.index() >= self.meta(|m| m.n_aspaces)) {
            return Err(Error::OutOfRange);
        }
        let ctx = self.boot_ctx();
        let t = self.free_tcb(ctx).ok_or(Error::NoFreeObject)?;
        self.init_tcb(ctx, t, priority, core, aspace);
        Ok(t)
    }

    /// Creates an endpoint.
    pub fn create_endpoint(&mut self) -> Result<EndpointId, Error> {
        let n = self.meta.get_mut();
        let id = EndpointId::new(n.n_eps).ok_or(Error::NoFreeObject)?;
        n.n_eps += 1;
        Ok(id)
    }

    /// Creates a notification.
    pub fn create_notification(&mut self) -> Result<NotificationId, Error> {
        let n = self.meta.get_mut();
        let id = NotificationId::new(n.n_ntfns).ok_or(Error::NoFreeObject)?;
        n.n_ntfns += 1;
        Ok(id)
    }

    /// Creates an address space whose page-table root is `root` (made by the HAL).
    pub fn create_address_space(&mut self, root: PhysAddr) -> Result<AsId, Error> {
        let n = self.meta.get_mut();
        let id = AsId::new(n.n_aspaces).ok_or(Error::NoFreeObject)?;
        n.n_aspaces += 1;
        let s = self.aspaces[id.index()].get_mut();
        s.root = root;
        s.life = AsLife::Alive;
        Ok(id)
    }

    /// Puts a capability into an empty slot of `thread`'s CSpace.
    pub fn install_cap(
        &mut self,
        thread: ThreadId,
        slot: CapSlot,
        obj: ObjRef,
        rights: Rights,
        badge: usize,
    ) -> Result<(), Error> {
        if self.conf[thread.index()].get_mut().life != Life::Alive {
            return Err(Error::InvalidCap);
        }
        if !self.object_exists(obj) {
            return Err(Error::InvalidCap);
        }
        let ctx = self.boot_ctx();
        if !self.cspaces[thread.index()].get_mut().is_empty(slot) {
            return Err(Error::SlotOccupied);
        }
        self.put_cap(ctx, thread, slot, Cap { obj, rights, badge });
        Ok(())
    }

    /// Makes an inactive thread runnable.
    pub fn start(&mut self, thread: ThreadId) -> Result<(), Error> {
        if self.conf[thread.index()].get_mut().life != Life::Alive {
            return Err(Error::InvalidCap);
        }
        let ctx = self.boot_ctx();
        self.resume(ctx, thread);
        // What the wake-up recorded (a Reschedule IPI for the thread's core) is moot before
        // the cores run: each starts by scheduling. Entries start with a clear record.
        self.local(ctx, |l| l.actions.clear());
        Ok(())
    }

    fn object_exists(&mut self, obj: ObjRef) -> bool {
        let m = *self.meta.get_mut();
        match obj {
            ObjRef::Thread(t) => self.conf[t.index()].get_mut().life == Life::Alive,
            ObjRef::Endpoint(e) => e.index() < m.n_eps,
            ObjRef::Notification(n) => n.index() < m.n_ntfns,
            ObjRef::AddressSpace(a) => {
                a.index() < m.n_aspaces && self.aspaces[a.index()].get_mut().life == AsLife::Alive
            }
            ObjRef::Memory(r) => m.regions[r.index()].live,
            ObjRef::IrqHandler(_) | ObjRef::Control => true,
        }
    }

    /// A TCB slot that can be (re)used: free, or a zombie no core runs any more.
    pub(crate) fn free_tcb(&self, ctx: Ctx) -> Option<ThreadId> {
        ThreadId::all().find(|&t| match self.conf(t).life {
            Life::Free => true,
            Life::Zombie => self.current_anywhere(ctx, t).is_none(),
            Life::Alive => false,
        })
    }

    pub(crate) fn init_tcb(
        &self,
        ctx: Ctx,
        t: ThreadId,
        priority: usize,
        core: CpuId,
        aspace: Option<AsId>,
    ) {
        self.conf_mut(ctx, t, |c| {
            *c = TcbConf {
                life: Life::Alive,
                core,
                aspace,
                ..TcbConf::FREE
            };
            c.set_priority(priority);
        });
        self.ipc(&self.hold(ctx, t), |i| *i = TcbIpc::INIT);
        self.link(&self.qlinks, t, |l| *l = Link::default());
        self.link(&self.slinks, t, |l| *l = Link::default());
        self.cspace_mut(ctx, t, |c| *c = CSpace::new());
    }

    /// Stores a capability and counts the reference (exclusive).
    pub(crate) fn put_cap(&self, ctx: Ctx, t: ThreadId, slot: CapSlot, cap: Cap) {
        let old = self.cspace_mut(ctx, t, |c| c.set(slot, Some(cap)));
        self.meta_mut(ctx, |m| {
            *m.refs.slot(cap.obj) += 1;
            if let Some(old) = old {
                *m.refs.slot(old.obj) -= 1;
            }
        });
    }

    /// Empties a slot and uncounts the reference (exclusive). Dropping the last capability to
    /// a memory region destroys the region (see [`mem`](crate::mem)).
    pub(crate) fn take_cap(&self, ctx: Ctx, t: ThreadId, slot: CapSlot) {
        if let Some(old) = self.cspace_mut(ctx, t, |c| c.set(slot, None)) {
            self.meta_mut(ctx, |m| *m.refs.slot(old.obj) -= 1);
            match old.obj {
                ObjRef::Memory(m) => self.memory_unreferenced(ctx, m),
                ObjRef::IrqHandler(i) => self.irq_unreferenced(ctx, i),
                _ => {}
            }
        }
    }
}
