//! Memory under capability control: region capabilities over all of RAM and device memory.
//!
//! # Model
//! A **memory region** ([`ObjRef::Memory`]) names a physical range `[base, base + pages *
//! PAGE_SIZE)` of one [`MemKind`]: RAM or device memory. At boot the image creates one region per
//! usable RAM range that neither the kernel, its page-table pool nor the boot image use, and one
//! per device range user drivers may own (never the kernel's own devices), and gives their
//! capabilities to the root task ([`Kernel::create_memory`]). From there:
//! * **Split** (`MemSplit`, MANAGE): makes a *child* region covering a sub-range of its parent;
//!   children of one parent never overlap ([`Error::Overlap`]). The child's capability may be
//!   handed to another thread (`Mint`), e.g. one partition per per-core pager. The parent
//!   keeps its authority over the whole range: a page is reachable through a region and its
//!   ancestors, never through two regions that are not derived from one another.
//! * **Map** (`MapPage`): any page of a region held, by page offset, into an address space the
//!   caller may change, readable always, writable with WRITE on the capability, executable with
//!   EXEC, never writable and executable at once; RAM only as normal memory, device memory only
//!   as device memory ([`Error::WrongMemoryKind`]).
//! * **Physical address** (`MemInfo`): base, size and kind of a region held, for DMA.
//! * **Unmap** (`UnmapPage`); **return** (`CapDelete` of the last capability to a region
//!   destroys it); **merge** (`MemMerge`: two adjacent sibling regions become one, mappings
//!   kept); **revoke** (`MemRevoke`: destroys every region split from this one, transitively).
//!   Destroying a region removes every capability to it and every mapping made through it or
//!   its descendants, on every core: the page-table stores happen in the section, and the call
//!   returns only after every core that may cache an affected address space flushed (the
//!   shoot-down protocol of `kernel/shootdown.rs`).
//!
//! # Why regions, not seL4's untyped memory
//! seL4 retypes untyped memory into frames, one capability per 4 KiB page, and records every
//! mapping in the frame capability. A pager handing out 10,000 pages per process (the
//! per-core-pager seed) would need 10,000 capability slots and a capability derivation per page;
//! with regions, a pager holds one capability for its whole partition and maps any page of it
//! by offset, as Fiasco.OC's sigma0 hands out flexpages. Splitting and merging keep the
//! per-core pagers' load balancing a matter of a few calls, whatever the amount moved.
//!
//! # The record of what is mapped
//! The page tables. Every leaf the kernel writes carries a tag naming the region it was mapped
//! through ([`MapTag`], region index + 1; x86_64 stores it in the ten
//! software bits of the entry, ARMv7 in a shadow array beside each second-level table). Revoking
//! sweeps the page tables of every address space for the tags of the destroyed regions. The
//! kernel has no per-address-space mapping table, so an address space maps as much as the
//! page-table pool allows; page tables emptied by unmaps return to the pool after the shoot-down
//! ([`Hal::reclaim_tables`]). Revocation is proportional to what is mapped, which is rare
//! management work; map and unmap are a page-table walk each.
//!
//! All of this runs in exclusive sections (management calls), so region tables and page tables
//! change under the big lock, the fine-grained strategy's write lock, or a transaction.

use crate::cap::{Cap, ObjRef, Rights};
use crate::config::*;
use crate::error::Error;
use crate::hal::{Hal, MapTag, PageAttrs, PhysAddr, SweepAction};
use crate::ids::*;
use crate::kernel::{AsLife, Ctx, Kernel, Life};
use crate::strategy::Strategy;

/// What a memory region holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum MemKind {
    /// RAM: mapped as normal write-back memory.
    Ram = 0,
    /// Device registers: mapped uncached / device, never executable.
    Device = 1,
}

/// A memory region object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub base: PhysAddr,
    pub pages: usize,
    pub kind: MemKind,
    /// The region it was split from (`None`: a boot region).
    pub parent: Option<MemId>,
    pub live: bool,
}

impl Region {
    pub(crate) const FREE: Region = Region {
        base: 0,
        pages: 0,
        kind: MemKind::Ram,
        parent: None,
        live: false,
    };

    /// One past the last byte.
    pub(crate) fn end(&self) -> PhysAddr {
        self.base + (self.pages as PhysAddr) * PAGE_SIZE as PhysAddr
    }

    fn overlaps(&self, base: PhysAddr, end: PhysAddr) -> bool {
        self.base < end && base < self.end()
    }
}

/// A set of regions (one bit per [`MemId`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemSet([u64; MAX_MEMS.div_ceil(64)]);

impl MemSet {
    pub(crate) const EMPTY: MemSet = MemSet([0; MAX_MEMS.div_ceil(64)]);

    pub(crate) fn insert(&mut self, m: MemId) {
        self.0[m.index() / 64] |= 1 << (m.index() % 64);
    }

    pub(crate) fn contains(&self, m: MemId) -> bool {
        self.0[m.index() / 64] & (1 << (m.index() % 64)) != 0
    }

    /// Whether a leaf with this tag was mapped through a region of the set.
    fn has_tag(&self, tag: MapTag) -> bool {
        tag_region(tag).is_some_and(|m| self.contains(m))
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// The tag of leaves mapped through `m`.
pub(crate) fn tag_of(m: MemId) -> MapTag {
    (m.index() + 1) as MapTag
}

/// The region a tag names (`None` for 0, the loader's leaves).
pub(crate) fn tag_region(tag: MapTag) -> Option<MemId> {
    (tag as usize).checked_sub(1).and_then(MemId::new)
}

// The tag of every region fits the ten software bits x86_64 page-table entries offer.
const _: () = assert!(MAX_MEMS < 1 << 10);

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// A region (copy).
    pub(crate) fn region(&self, m: MemId) -> Region {
        self.meta(|x| x.regions[m.index()])
    }

    /// Looks up a memory capability of `t` with `rights`: the region and its id.
    pub(crate) fn lookup_mem(
        &self,
        t: ThreadId,
        slot: CapSlot,
        rights: Rights,
    ) -> Result<(MemId, Region), Error> {
        match self
            .lookup(t, slot, crate::cap::ObjKind::Memory, rights)?
            .obj
        {
            ObjRef::Memory(m) => Ok((m, self.region(m))),
            _ => Err(Error::WrongType),
        }
    }

    /// A free region object (exclusive sections).
    pub(crate) fn free_region(&self) -> Option<MemId> {
        MemId::all().find(|&m| !self.region(m).live)
    }

    /// Whether a live child of `parent` overlaps `[base, end)`.
    pub(crate) fn child_overlaps(&self, parent: MemId, base: PhysAddr, end: PhysAddr) -> bool {
        self.meta(|x| {
            x.regions
                .iter()
                .any(|r| r.live && r.parent == Some(parent) && r.overlaps(base, end))
        })
    }

    /// Whether `m` has a live child.
    pub(crate) fn has_children(&self, m: MemId) -> bool {
        self.meta(|x| x.regions.iter().any(|r| r.live && r.parent == Some(m)))
    }

    /// `m`'s live descendants (and `m` itself if `with_root`).
    pub(crate) fn subtree(&self, m: MemId, with_root: bool) -> MemSet {
        let mut set = MemSet::EMPTY;
        set.insert(m);
        // Parents can have higher indices than children (slots are reused), so repeat until
        // nothing is added: at most one pass per level of the tree.
        loop {
            let mut grew = false;
            for r in MemId::all() {
                let reg = self.region(r);
                if reg.live && !set.contains(r) && reg.parent.is_some_and(|p| set.contains(p)) {
                    set.insert(r);
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        if !with_root {
            set.0[m.index() / 64] &= !(1 << (m.index() % 64));
        }
        set
    }

    /// Boot time: a region over `[base, base + pages * PAGE_SIZE)` that overlaps no other
    /// boot region. The image calls it for the RAM and device ranges user space may own.
    pub fn create_memory(
        &mut self,
        base: PhysAddr,
        pages: usize,
        kind: MemKind,
    ) -> Result<MemId, Error> {
        let size = (pages as PhysAddr).checked_mul(PAGE_SIZE as PhysAddr);
        let end = size.and_then(|s| base.checked_add(s));
        let (Some(end), true, true) = (end, pages > 0, base % PAGE_SIZE as PhysAddr == 0) else {
            return Err(Error::InvalidArgument);
        };
        let meta = self.meta.get_mut();
        if meta.regions.iter().any(|r| r.live && r.overlaps(base, end)) {
            return Err(Error::Overlap);
        }
        let i = meta
            .regions
            .iter()
            .position(|r| !r.live)
            .ok_or(Error::NoFreeObject)?;
        meta.regions[i] = Region {
            base,
            pages,
            kind,
            parent: None,
            live: true,
        };
        Ok(MemId::new(i).expect("index of the region table"))
    }

    /// Splits `[offset, offset + pages)` (in pages) of `parent` off as a new child region `new`.
    pub(crate) fn split_region(
        &self,
        ctx: Ctx,
        parent: MemId,
        new: MemId,
        offset: usize,
        pages: usize,
    ) {
        let p = self.region(parent);
        self.meta_mut(ctx, |x| {
            x.regions[new.index()] = Region {
                base: p.base + (offset as PhysAddr) * PAGE_SIZE as PhysAddr,
                pages,
                kind: p.kind,
                parent: Some(parent),
                live: true,
            }
        });
    }

    /// Merges region `b` into its adjacent sibling `a`: `b`'s mappings are retagged to `a`,
    /// its capabilities removed.
    pub(crate) fn merge_regions(&self, ctx: Ctx, a: MemId, b: MemId) {
        let from = tag_of(b);
        let to = tag_of(a);
        self.for_each_space(|root| {
            self.hal.sweep(ctx.cpu, root, &mut |leaf| {
                if leaf.tag == from {
                    SweepAction::Retag(to)
                } else {
                    SweepAction::Keep
                }
            });
        });
        let pages = self.region(b).pages;
        self.meta_mut(ctx, |x| {
            x.regions[b.index()].live = false;
            x.regions[a.index()].pages += pages;
        });
        self.drop_caps_to(ctx, |obj| obj == ObjRef::Memory(b));
        self.meta_mut(ctx, |x| x.regions[b.index()] = Region::FREE);
    }

    /// Destroys every region of `set`: each capability to them is removed, each mapping made
    /// through them is removed and shot down on every core that may cache it (waited for after
    /// the section).
    pub(crate) fn destroy_regions(&self, ctx: Ctx, set: MemSet) {
        if set.is_empty() {
            return;
        }
        // Dead first, so that dropping their last capabilities below does not destroy again.
        self.meta_mut(ctx, |x| {
            for m in MemId::all() {
                if set.contains(m) {
                    x.regions[m.index()].live = false;
                }
            }
        });
        self.drop_caps_to(
            ctx,
            |obj| matches!(obj, ObjRef::Memory(m) if set.contains(m)),
        );
        let n = self.meta(|x| x.n_aspaces);
        for a in AsId::all().take(n) {
            let (root, life) = self.aspace(a, |s| (s.root, s.life));
            if life != AsLife::Alive {
                continue;
            }
            let removed = self.hal.sweep(ctx.cpu, root, &mut |leaf| {
                if set.has_tag(leaf.tag) {
                    SweepAction::Remove
                } else {
                    SweepAction::Keep
                }
            });
            if removed > 0 {
                self.shoot_down(ctx, a, root, None);
                self.act(ctx, |x| x.set_reclaim());
            }
        }
        self.meta_mut(ctx, |x| {
            for m in MemId::all() {
                if set.contains(m) {
                    x.regions[m.index()] = Region::FREE;
                }
            }
        });
    }

    /// Removes every capability (in every live thread's CSpace) whose object `pred` selects.
    pub(crate) fn drop_caps_to(&self, ctx: Ctx, pred: impl Fn(ObjRef) -> bool) {
        for holder in ThreadId::all() {
            if self.conf(holder).life != Life::Alive {
                continue;
            }
            for slot in CapSlot::all() {
                if self.cap(holder, slot).is_ok_and(|c| pred(c.obj)) {
                    self.take_cap(ctx, holder, slot);
                }
            }
        }
    }

    /// Runs `f` on the root of every live address space.
    fn for_each_space(&self, mut f: impl FnMut(PhysAddr)) {
        let n = self.meta(|x| x.n_aspaces);
        for a in AsId::all().take(n) {
            let (root, life) = self.aspace(a, |s| (s.root, s.life));
            if life == AsLife::Alive {
                f(root);
            }
        }
    }

    /// A capability to `m` was dropped: destroy `m` (and what was split from it) if it was the
    /// last one.
    pub(crate) fn memory_unreferenced(&self, ctx: Ctx, m: MemId) {
        let unreferenced = self.meta(|x| x.refs.mems[m.index()] == 0);
        if unreferenced && self.region(m).live {
            self.destroy_regions(ctx, self.subtree(m, true));
        }
    }

    /// Decode of `MapPage`: the page's physical address and the tag, or why not.
    pub(crate) fn check_map(
        &self,
        t: ThreadId,
        mem: CapSlot,
        offset: usize,
        attrs: PageAttrs,
    ) -> Result<(PhysAddr, MapTag), Error> {
        let mut need = Rights::READ;
        if attrs.contains(PageAttrs::WRITE) {
            need |= Rights::WRITE;
        }
        if attrs.contains(PageAttrs::EXEC) {
            need |= Rights::EXEC;
        }
        let (m, r) = self.lookup_mem(t, mem, need)?;
        if offset >= r.pages {
            return Err(Error::OutOfRange);
        }
        let device = attrs.contains(PageAttrs::DEVICE);
        if device != (r.kind == MemKind::Device) {
            return Err(Error::WrongMemoryKind);
        }
        Ok((
            r.base + (offset as PhysAddr) * PAGE_SIZE as PhysAddr,
            tag_of(m),
        ))
    }

    /// The capability a split gives: the parent capability's rights, no badge.
    pub(crate) fn child_cap(new: MemId, parent_cap: Cap) -> Cap {
        Cap {
            obj: ObjRef::Memory(new),
            rights: parent_cap.rights,
            badge: 0,
        }
    }
}
