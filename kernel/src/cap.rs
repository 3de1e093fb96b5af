//! Capabilities: unforgeable references to kernel objects, with rights and a badge.
//!
//! Each thread has its own CSpace of [`CSPACE_SLOTS`] slots. A system call names objects only
//! through slot indices of the caller's CSpace; the kernel looks the slot up and checks the
//! object's type and the rights the operation needs. A thread therefore reaches exactly the
//! objects its CSpace holds capabilities to.
//!
//! Reply capabilities (created by `Call`) are not stored in the CSpace but in the receiver's TCB
//! reply slot, as in seL4 without MCS; see [`Syscall::Reply`](crate::syscall::Syscall::Reply).

use crate::config::CSPACE_SLOTS;
use crate::error::Error;
use crate::ids::*;

pub use abi::Rights;

/// The object a capability names.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ObjRef {
    /// A thread control block.
    Thread(ThreadId),
    /// An IPC endpoint.
    Endpoint(EndpointId),
    /// A notification.
    Notification(NotificationId),
    /// An address space.
    AddressSpace(AsId),
    /// A memory region: a physical range of RAM or device memory (see [`crate::mem`]).
    Memory(MemId),
    /// The handler of one interrupt line.
    IrqHandler(IrqId),
    /// Authority to create threads, address spaces, endpoints and notifications (the kernel
    /// takes a free object from its fixed tables).
    Control,
}

/// The kinds of objects, for [`Error::WrongType`] checks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ObjKind {
    /// [`ObjRef::Thread`].
    Thread,
    /// [`ObjRef::Endpoint`].
    Endpoint,
    /// [`ObjRef::Notification`].
    Notification,
    /// [`ObjRef::AddressSpace`].
    AddressSpace,
    /// [`ObjRef::Memory`].
    Memory,
    /// [`ObjRef::IrqHandler`].
    IrqHandler,
    /// [`ObjRef::Control`].
    Control,
}

impl ObjRef {
    /// The kind of object.
    pub const fn kind(self) -> ObjKind {
        match self {
            ObjRef::Thread(_) => ObjKind::Thread,
            ObjRef::Endpoint(_) => ObjKind::Endpoint,
            ObjRef::Notification(_) => ObjKind::Notification,
            ObjRef::AddressSpace(_) => ObjKind::AddressSpace,
            ObjRef::Memory(_) => ObjKind::Memory,
            ObjRef::IrqHandler(_) => ObjKind::IrqHandler,
            ObjRef::Control => ObjKind::Control,
        }
    }
}

/// A capability: object, rights and badge (delivered to receivers, ORed into notifications).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Cap {
    /// The object.
    pub obj: ObjRef,
    /// What the holder may do with it.
    pub rights: Rights,
    /// An identifier chosen by whoever minted the capability.
    pub badge: usize,
}

impl Cap {
    /// Checks kind and rights: `Ok(self)` or the error the call returns.
    pub fn check(self, kind: ObjKind, rights: Rights) -> Result<Cap, Error> {
        if self.obj.kind() != kind {
            Err(Error::WrongType)
        } else if !self.rights.contains(rights) {
            Err(Error::MissingRight)
        } else {
            Ok(self)
        }
    }
}

/// One thread's capability space: a fixed array of slots.
#[derive(Clone, Copy, Debug)]
pub struct CSpace {
    slots: [Slot; CSPACE_SLOTS],
}

/// A CSpace slot: 16 bytes on every target, so that a slot's address is the slot index
/// shifted (ARMv7's 12-byte capability takes three instructions to scale the index on the IPC
/// fastpath's lookup; x86_64's capability is 16 bytes already).
#[derive(Clone, Copy, Debug)]
#[repr(align(16))]
struct Slot(Option<Cap>);

impl Default for CSpace {
    fn default() -> Self {
        Self::new()
    }
}

impl CSpace {
    /// All slots empty.
    pub const fn new() -> Self {
        Self {
            slots: [Slot(None); CSPACE_SLOTS],
        }
    }

    /// The capability in `slot`, or [`Error::InvalidCap`].
    pub fn get(&self, slot: CapSlot) -> Result<Cap, Error> {
        self.slots[slot.index()].0.ok_or(Error::InvalidCap)
    }

    /// The endpoint and badge of the capability in `slot` if it is an endpoint capability with
    /// `rights`; `None` for anything else, whatever the reason. The fastpath's lookup: one
    /// match on the slot and no error to build (through `get`, `check` and `lookup_ep`'s
    /// `Result`, the endpoint id is tested again for presence; the empty slot's tag is still
    /// compared apart from the endpoint's, which the compiler does not merge).
    #[inline(always)]
    pub fn endpoint(&self, slot: CapSlot, rights: Rights) -> Option<(EndpointId, usize)> {
        match self.slots[slot.index()].0 {
            Some(Cap {
                obj: ObjRef::Endpoint(e),
                rights: r,
                badge,
            }) if r.contains(rights) => Some((e, badge)),
            _ => None,
        }
    }

    /// Looks up `slot` and checks kind and rights.
    pub fn lookup(&self, slot: CapSlot, kind: ObjKind, rights: Rights) -> Result<Cap, Error> {
        self.get(slot)?.check(kind, rights)
    }

    /// Whether `slot` is empty.
    pub fn is_empty(&self, slot: CapSlot) -> bool {
        self.slots[slot.index()].0.is_none()
    }

    /// Stores `cap` in `slot`, returning what was there.
    pub fn set(&mut self, slot: CapSlot, cap: Option<Cap>) -> Option<Cap> {
        core::mem::replace(&mut self.slots[slot.index()].0, cap)
    }

    /// Iterates over the occupied slots.
    pub fn iter(&self) -> impl Iterator<Item = (CapSlot, Cap)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((CapSlot::new(i)?, c.0?)))
    }
}
