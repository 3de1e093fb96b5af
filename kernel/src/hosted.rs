//! A software model of page tables for hosted HALs (unit tests, the hosted harness and its
//! benchmarks): the [`Hal`](crate::Hal) mapping operations with the semantics a real HAL has,
//! including a fixed pool of page-table frames, tables retired by unmaps and returned only by
//! [`PageTables::reclaim_tables`], and [`MapPrepError::Occupied`] for leaves the kernel did not
//! make (tag 0, as the image loader's).
//!
//! Each address space is a set of second-level tables keyed by `vaddr >> 21` (one table per
//! 2 MiB, as an x86_64 page table), each holding its leaves; a table costs one pool frame.
//! Compiled for tests and with the `hosted` feature (it needs `std`).

extern crate std;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::vec::Vec;

use kernel_locks::CpuId;

use crate::config::MAX_CPUS;
use crate::hal::{Leaf, MapPrepError, MapTag, PageAttrs, PhysAddr, SweepAction};

type Table = BTreeMap<usize, Leaf>;

#[derive(Default)]
struct State {
    /// `(root, vaddr >> 21)` -> the table's leaves by page-aligned address.
    tables: BTreeMap<(PhysAddr, usize), Table>,
    free: usize,
    total: usize,
    retired: [usize; MAX_CPUS],
    /// Every table ever linked (for the leak checks: made = reclaimed + live + retired).
    made: u64,
}

/// Page tables in host memory, with a pool of `total` table frames.
pub struct PageTables {
    state: Mutex<State>,
}

impl PageTables {
    /// Page tables whose pool has `frames` table frames.
    pub fn new(frames: usize) -> Self {
        Self {
            state: Mutex::new(State {
                free: frames,
                total: frames,
                ..State::default()
            }),
        }
    }

    fn key(root: PhysAddr, vaddr: usize) -> (PhysAddr, usize) {
        (root, vaddr >> 21)
    }

    /// [`Hal::prepare_map`](crate::Hal::prepare_map).
    pub fn prepare_map(&self, root: PhysAddr, vaddr: usize) -> Result<(), MapPrepError> {
        let mut s = self.state.lock().unwrap();
        let key = Self::key(root, vaddr);
        if let Some(t) = s.tables.get(&key) {
            return if t.contains_key(&vaddr) {
                Err(MapPrepError::Occupied)
            } else {
                Ok(())
            };
        }
        if s.free == 0 {
            return Err(MapPrepError::OutOfMemory);
        }
        s.free -= 1;
        s.made += 1;
        s.tables.insert(key, Table::new());
        Ok(())
    }

    /// [`Hal::map_page`](crate::Hal::map_page). Panics without `prepare_map` (a kernel bug).
    pub fn map_page(
        &self,
        root: PhysAddr,
        vaddr: usize,
        phys: PhysAddr,
        attrs: PageAttrs,
        tag: MapTag,
    ) {
        let mut s = self.state.lock().unwrap();
        let t = s
            .tables
            .get_mut(&Self::key(root, vaddr))
            .expect("map_page without prepare_map");
        assert!(
            t.insert(vaddr, Leaf { phys, attrs, tag }).is_none(),
            "map over a leaf"
        );
    }

    /// A leaf the image loader made (tag 0), taking a table frame if needed; `false` if the pool
    /// is empty or the page is mapped.
    pub fn map_loader(
        &self,
        root: PhysAddr,
        vaddr: usize,
        phys: PhysAddr,
        attrs: PageAttrs,
    ) -> bool {
        self.prepare_map(root, vaddr).is_ok() && {
            self.map_page(root, vaddr, phys, attrs, 0);
            true
        }
    }

    /// [`Hal::lookup`](crate::Hal::lookup).
    pub fn lookup(&self, root: PhysAddr, vaddr: usize) -> Option<Leaf> {
        let s = self.state.lock().unwrap();
        s.tables.get(&Self::key(root, vaddr))?.get(&vaddr).copied()
    }

    /// [`Hal::unmap_page`](crate::Hal::unmap_page).
    pub fn unmap_page(&self, cpu: CpuId, root: PhysAddr, vaddr: usize) {
        let mut s = self.state.lock().unwrap();
        let key = Self::key(root, vaddr);
        let empty = s.tables.get_mut(&key).is_some_and(|t| {
            t.remove(&vaddr);
            t.is_empty()
        });
        if empty {
            s.tables.remove(&key);
            s.retired[cpu] += 1;
        }
    }

    /// [`Hal::sweep`](crate::Hal::sweep).
    pub fn sweep(
        &self,
        cpu: CpuId,
        root: PhysAddr,
        f: &mut dyn FnMut(&Leaf) -> SweepAction,
    ) -> usize {
        let mut s = self.state.lock().unwrap();
        let keys: Vec<_> = s
            .tables
            .range((root, 0)..=(root, usize::MAX))
            .map(|(k, _)| *k)
            .collect();
        let mut removed = 0;
        for key in keys {
            let t = s.tables.get_mut(&key).expect("listed above");
            t.retain(|_, leaf| match f(leaf) {
                SweepAction::Keep => true,
                SweepAction::Remove => {
                    removed += 1;
                    false
                }
                SweepAction::Retag(tag) => {
                    leaf.tag = tag;
                    true
                }
            });
            if t.is_empty() {
                s.tables.remove(&key);
                s.retired[cpu] += 1;
            }
        }
        removed
    }

    /// [`Hal::reclaim_tables`](crate::Hal::reclaim_tables).
    pub fn reclaim_tables(&self, cpu: CpuId) {
        let mut s = self.state.lock().unwrap();
        let n = core::mem::take(&mut s.retired[cpu]);
        s.free += n;
    }

    /// [`Hal::table_frames`](crate::Hal::table_frames).
    pub fn table_frames(&self) -> (usize, usize) {
        let s = self.state.lock().unwrap();
        (s.free, s.total)
    }

    /// Tables retired and not yet reclaimed, over all cores.
    pub fn retired(&self) -> usize {
        self.state.lock().unwrap().retired.iter().sum()
    }

    /// Every leaf of `root`, by address.
    pub fn leaves(&self, root: PhysAddr) -> Vec<(usize, Leaf)> {
        let s = self.state.lock().unwrap();
        s.tables
            .range((root, 0)..=(root, usize::MAX))
            .flat_map(|(_, t)| t.iter().map(|(v, l)| (*v, *l)))
            .collect()
    }
}
