//! The key space: a slot table (entries and hash buckets) and a compacting byte arena.
//!
//! # Memory model
//!
//! All memory is given by the caller at construction and never grows:
//!
//! * an **arena** `&mut [u8]` holds every byte of every key, value, hash field name and field
//!   value. Each entry owns one *block*: an 8-byte header (block length, owning slot) followed
//!   by the key (or field name) and the value. Blocks are bump-allocated; a freed block becomes a
//!   hole, and when the bump pointer reaches the end while the holes together have room, the
//!   arena is **compacted** (live blocks slide down, their slots' offsets are updated through
//!   the header's owner field). So there is no fragmentation: a request fits exactly when
//!   `used + needed <= capacity`, and `used_memory` is an exact, deterministic number. The cost
//!   is an occasional pass over the arena, amortised over the bytes freed since the last one;
//!   near a full arena compactions get frequent, the usual price of a compacting heap.
//! * a **slot table** `&mut [Slot]` bounds the number of entries (string keys, hash keys and
//!   hash fields each take one slot). Slot `i` also holds the head of hash bucket `i` (separate
//!   chaining, as many buckets as slots, so the load factor never exceeds 1 and deleting is a
//!   plain unlink). Free slots form a list.
//!
//! Why not an allocator: the server runs as a user program on the microkernel, one instance per
//! core, with a fixed memory grant; a global allocator would add a second, hidden memory budget
//! with its own fragmentation, and an allocation failure in the middle of a command would leave
//! it half applied. Here every command first computes exactly what it will need (bytes and
//! slots, the peak along its steps), answers `-OOM` if that does not fit, and otherwise applies
//! steps that cannot fail. An acknowledged write is never evicted (there is no eviction policy:
//! the behaviour of Redis's `maxmemory-policy noeviction`).
//!
//! A hash is a key entry (its block holds the key) plus one entry per field, keyed by
//! (hash's slot, field name) in the same bucket table and linked in insertion order from the
//! hash's entry, so `HGET`/`HSET` of one field cost O(1) and `HGETALL` answers in insertion
//! order (as Redis does for small hashes).
//!
//! Expiry times are absolute milliseconds of the caller's clock. An expired key is deleted when
//! a command looks it up, a few slots are swept on every command, and the whole table is swept
//! before a write is refused for lack of memory and before `DBSIZE`/`INFO` count keys.

/// Number of databases (`SELECT 0` to `SELECT 15`).
pub const DATABASES: usize = 16;

pub(crate) const NIL: u32 = u32::MAX;
/// Block header: length (u32 LE) then owning slot (u32 LE, [`NIL`] when free).
pub(crate) const HDR: usize = 8;
/// Slots looked at for expired keys on every command.
const SWEEP_PER_COMMAND: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Free,
    Str,
    Hash,
    Field,
}

/// One entry of the slot table (caller-provided storage, see [`Store::new`]); its contents are
/// private. Create the table with `[Slot::EMPTY; N]`.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Head of hash bucket `i` for the slot at index `i`; unrelated to this slot's entry.
    head: u32,
    pub(crate) kind: Kind,
    pub(crate) db: u8,
    hash: u32,
    /// Next entry in the bucket chain, or next free slot.
    chain: u32,
    pub(crate) off: u32,
    pub(crate) klen: u32,
    pub(crate) vlen: u32,
    /// Absolute expiry time in ms, 0 for none (string and hash keys).
    pub(crate) expire: u64,
    /// Hash: first field. Field: next sibling.
    pub(crate) next: u32,
    /// Hash: last field. Field: previous sibling.
    pub(crate) prev: u32,
    /// Field: the hash's slot.
    pub(crate) parent: u32,
    /// Hash: number of fields.
    pub(crate) count: u32,
}

impl Slot {
    /// An unused slot, to initialise the table with.
    pub const EMPTY: Slot = Slot {
        head: NIL,
        kind: Kind::Free,
        db: 0,
        hash: 0,
        chain: NIL,
        off: 0,
        klen: 0,
        vlen: 0,
        expire: 0,
        next: NIL,
        prev: NIL,
        parent: NIL,
        count: 0,
    };
}

impl Default for Slot {
    fn default() -> Self {
        Slot::EMPTY
    }
}

/// The key-value store: 16 databases in one caller-provided arena and slot table.
pub struct Store<'a> {
    pub(crate) arena: &'a mut [u8],
    pub(crate) slots: &'a mut [Slot],
    /// Usable arena bytes.
    pub(crate) cap: usize,
    /// Usable slots.
    pub(crate) nslots: usize,
    /// Bump pointer: blocks live in `arena[..top]`.
    top: usize,
    /// Bytes in live blocks.
    pub(crate) used: usize,
    free_head: u32,
    pub(crate) free_slots: usize,
    pub(crate) keys: [u32; DATABASES],
    cursor: usize,
    /// Writes the server's own `INFO` section (see [`Store::set_info_section`]).
    pub(crate) info_section: Option<InfoSection>,
}

/// A function that writes a section of the `INFO` reply that the embedding server knows and the
/// store does not (the network server writes its cores' busy and idle cycles there). It is
/// called once per `INFO`, into a buffer of [`INFO_SECTION_MAX`] bytes; a section that does not
/// fit is left out whole (the reply then says so in `info_section_error`).
pub type InfoSection = fn(&mut dyn core::fmt::Write) -> core::fmt::Result;

/// The most bytes an [`InfoSection`] may write.
pub const INFO_SECTION_MAX: usize = 1024;

fn fnv(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn key_hash(db: u8, key: &[u8]) -> u32 {
    fnv(fnv(0x811c_9dc5, &[db]), key)
}

fn field_hash(parent: u32, field: &[u8]) -> u32 {
    fnv(fnv(0x811c_9dc5, &[0xff, 0xfe]), &parent.to_le_bytes()) ^ fnv(0x0bad_cafe, field)
}

impl<'a> Store<'a> {
    /// A store keeping its bytes in `arena` (its size is `maxmemory`; at most 4 GiB is used) and
    /// at most `slots.len()` entries (each string key, hash key and hash field takes one).
    pub fn new(arena: &'a mut [u8], slots: &'a mut [Slot]) -> Self {
        let cap = arena.len().min(u32::MAX as usize);
        let nslots = slots.len().min(NIL as usize - 1);
        let mut s = Store {
            arena,
            slots,
            cap,
            nslots,
            top: 0,
            used: 0,
            free_head: NIL,
            free_slots: 0,
            keys: [0; DATABASES],
            cursor: 0,
            info_section: None,
        };
        s.clear_all();
        s
    }

    /// Empties every database (`FLUSHALL`).
    pub fn clear_all(&mut self) {
        let n = self.nslots;
        for (i, s) in self.slots[..n].iter_mut().enumerate() {
            *s = Slot::EMPTY;
            s.chain = if i + 1 < n { i as u32 + 1 } else { NIL };
        }
        self.free_head = if n > 0 { 0 } else { NIL };
        self.free_slots = n;
        self.top = 0;
        self.used = 0;
        self.keys = [0; DATABASES];
        self.cursor = 0;
    }

    /// Adds the server's own section to every `INFO` reply, after the store's sections.
    pub fn set_info_section(&mut self, section: InfoSection) {
        self.info_section = Some(section);
    }

    /// Arena bytes in use (keys, values and 8 bytes of header per entry).
    pub fn used_memory(&self) -> usize {
        self.used
    }

    /// The arena's size: the memory budget.
    pub fn max_memory(&self) -> usize {
        self.cap
    }

    /// Slots in use (string keys, hash keys and hash fields).
    pub fn used_slots(&self) -> usize {
        self.nslots - self.free_slots
    }

    /// The slot table's size: the bound on entries.
    pub fn max_slots(&self) -> usize {
        self.nslots
    }

    /// Keys in database `db`, counting expired keys not yet reclaimed (0 for a bad index).
    pub fn key_count(&self, db: usize) -> usize {
        self.keys.get(db).map_or(0, |&n| n as usize)
    }

    // ---- arena ----

    fn rd32(&self, at: usize) -> u32 {
        self.arena
            .get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, u32::from_le_bytes)
    }

    fn wr32(&mut self, at: usize, v: u32) {
        if let Some(b) = self.arena.get_mut(at..at + 4) {
            b.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Allocates a block of `len` bytes (header included) owned by slot `owner`. The caller has
    /// checked that `used + len <= cap`.
    fn alloc_block(&mut self, owner: u32, len: usize) -> Option<u32> {
        if self.used + len > self.cap {
            return None;
        }
        if self.top + len > self.cap {
            self.compact();
        }
        let off = self.top;
        self.wr32(off, len as u32);
        self.wr32(off + 4, owner);
        self.top += len;
        self.used += len;
        Some(off as u32)
    }

    fn free_block(&mut self, off: u32) {
        let off = off as usize;
        let len = self.rd32(off) as usize;
        self.wr32(off + 4, NIL);
        self.used -= len;
        if off + len == self.top {
            self.top = off;
        }
    }

    /// Slides every live block down over the holes.
    fn compact(&mut self) {
        let (mut read, mut write) = (0, 0);
        while read < self.top {
            let len = self.rd32(read) as usize;
            let owner = self.rd32(read + 4);
            if len < HDR {
                break; // Cannot happen: every block has a header.
            }
            if owner != NIL {
                if read != write {
                    self.arena.copy_within(read..read + len, write);
                }
                self.slots[owner as usize].off = write as u32;
                write += len;
            }
            read += len;
        }
        self.top = write;
    }

    // ---- slots and buckets ----

    fn alloc_slot(&mut self) -> Option<u32> {
        let i = self.free_head;
        if i == NIL {
            return None;
        }
        self.free_head = self.slots[i as usize].chain;
        self.free_slots -= 1;
        Some(i)
    }

    fn free_slot(&mut self, i: u32) {
        let head = self.slots[i as usize].head;
        self.slots[i as usize] = Slot {
            head,
            chain: self.free_head,
            ..Slot::EMPTY
        };
        self.free_head = i;
        self.free_slots += 1;
    }

    fn bucket(&self, hash: u32) -> usize {
        hash as usize % self.nslots
    }

    fn link(&mut self, i: u32) {
        let b = self.bucket(self.slots[i as usize].hash);
        self.slots[i as usize].chain = self.slots[b].head;
        self.slots[b].head = i;
    }

    fn unlink(&mut self, i: u32) {
        let b = self.bucket(self.slots[i as usize].hash);
        let after = self.slots[i as usize].chain;
        if self.slots[b].head == i {
            self.slots[b].head = after;
            return;
        }
        let mut cur = self.slots[b].head;
        while cur != NIL {
            let next = self.slots[cur as usize].chain;
            if next == i {
                self.slots[cur as usize].chain = after;
                return;
            }
            cur = next;
        }
    }

    /// The key (or field name) of entry `i`.
    pub(crate) fn key_of(&self, i: u32) -> &[u8] {
        let s = &self.slots[i as usize];
        let at = s.off as usize + HDR;
        self.arena.get(at..at + s.klen as usize).unwrap_or(&[])
    }

    /// The value of string or field entry `i`.
    pub(crate) fn val_of(&self, i: u32) -> &[u8] {
        let s = &self.slots[i as usize];
        let at = s.off as usize + HDR + s.klen as usize;
        self.arena.get(at..at + s.vlen as usize).unwrap_or(&[])
    }

    fn expired(s: &Slot, now: u64) -> bool {
        s.expire != 0 && now > s.expire
    }

    /// The live key `key` of database `db`, deleting it first if it expired.
    pub(crate) fn find_key(&mut self, db: u8, key: &[u8], now: u64) -> Option<u32> {
        if self.nslots == 0 {
            return None;
        }
        let h = key_hash(db, key);
        let mut cur = self.slots[self.bucket(h)].head;
        while cur != NIL {
            let s = self.slots[cur as usize];
            if s.hash == h
                && matches!(s.kind, Kind::Str | Kind::Hash)
                && s.db == db
                && self.key_of(cur) == key
            {
                if Self::expired(&s, now) {
                    self.remove_key(cur);
                    return None;
                }
                return Some(cur);
            }
            cur = s.chain;
        }
        None
    }

    /// Field `field` of hash entry `parent`.
    pub(crate) fn find_field(&self, parent: u32, field: &[u8]) -> Option<u32> {
        if self.nslots == 0 {
            return None;
        }
        let h = field_hash(parent, field);
        let mut cur = self.slots[self.bucket(h)].head;
        while cur != NIL {
            let s = &self.slots[cur as usize];
            if s.hash == h
                && s.kind == Kind::Field
                && s.parent == parent
                && self.key_of(cur) == field
            {
                return Some(cur);
            }
            cur = s.chain;
        }
        None
    }

    /// Bytes and slots that deleting key `i` gives back.
    pub(crate) fn footprint(&self, i: u32) -> (usize, usize) {
        let s = &self.slots[i as usize];
        let mut bytes = HDR + s.klen as usize + s.vlen as usize;
        let mut slots = 1;
        let mut f = if s.kind == Kind::Hash { s.next } else { NIL };
        while f != NIL {
            let fs = &self.slots[f as usize];
            bytes += HDR + fs.klen as usize + fs.vlen as usize;
            slots += 1;
            f = fs.next;
        }
        (bytes, slots)
    }

    /// Stores a new entry's block and links it; the caller has checked the resources.
    fn new_entry(&mut self, kind: Kind, hash: u32, key: &[u8], val: &[u8]) -> Option<u32> {
        let i = self.alloc_slot()?;
        let Some(off) = self.alloc_block(i, HDR + key.len() + val.len()) else {
            self.free_slot(i);
            return None;
        };
        let at = off as usize + HDR;
        self.arena[at..at + key.len()].copy_from_slice(key);
        self.arena[at + key.len()..at + key.len() + val.len()].copy_from_slice(val);
        let head = self.slots[i as usize].head;
        self.slots[i as usize] = Slot {
            head,
            kind,
            hash,
            off,
            klen: key.len() as u32,
            vlen: val.len() as u32,
            ..Slot::EMPTY
        };
        self.link(i);
        Some(i)
    }

    /// Inserts a new string (`val = Some`) or empty hash key; the caller has checked that it
    /// is absent and that the resources suffice.
    pub(crate) fn insert_key(
        &mut self,
        db: u8,
        key: &[u8],
        val: Option<&[u8]>,
        expire: u64,
    ) -> Option<u32> {
        let kind = if val.is_some() { Kind::Str } else { Kind::Hash };
        let i = self.new_entry(kind, key_hash(db, key), key, val.unwrap_or(&[]))?;
        let s = &mut self.slots[i as usize];
        s.db = db;
        s.expire = expire;
        self.keys[db as usize] += 1;
        Some(i)
    }

    /// Appends field `field` = `val` to hash `parent`; the caller has checked the resources.
    pub(crate) fn insert_field(&mut self, parent: u32, field: &[u8], val: &[u8]) -> Option<u32> {
        let i = self.new_entry(Kind::Field, field_hash(parent, field), field, val)?;
        let last = self.slots[parent as usize].prev;
        {
            let s = &mut self.slots[i as usize];
            s.parent = parent;
            s.prev = last;
        }
        if last == NIL {
            self.slots[parent as usize].next = i;
        } else {
            self.slots[last as usize].next = i;
        }
        let p = &mut self.slots[parent as usize];
        p.prev = i;
        p.count += 1;
        Some(i)
    }

    /// Replaces the value of string or field entry `i` (whose key is `key`); the caller has
    /// checked that the new block fits once the old one is freed.
    pub(crate) fn replace_value(&mut self, i: u32, key: &[u8], val: &[u8]) {
        let s = self.slots[i as usize];
        if s.vlen as usize == val.len() {
            let at = s.off as usize + HDR + s.klen as usize;
            self.arena[at..at + val.len()].copy_from_slice(val);
            return;
        }
        self.free_block(s.off);
        let Some(off) = self.alloc_block(i, HDR + key.len() + val.len()) else {
            // Unreachable after the caller's check; keep the table consistent regardless.
            self.slots[i as usize].vlen = 0;
            self.slots[i as usize].klen = 0;
            return;
        };
        let at = off as usize + HDR;
        self.arena[at..at + key.len()].copy_from_slice(key);
        self.arena[at + key.len()..at + key.len() + val.len()].copy_from_slice(val);
        let s = &mut self.slots[i as usize];
        s.off = off;
        s.vlen = val.len() as u32;
    }

    /// Deletes field entry `i` from its hash (not the hash itself when it becomes empty).
    pub(crate) fn remove_field(&mut self, i: u32) {
        let s = self.slots[i as usize];
        let p = s.parent as usize;
        if s.prev == NIL {
            self.slots[p].next = s.next;
        } else {
            self.slots[s.prev as usize].next = s.next;
        }
        if s.next == NIL {
            self.slots[p].prev = s.prev;
        } else {
            self.slots[s.next as usize].prev = s.prev;
        }
        self.slots[p].count -= 1;
        self.free_block(s.off);
        self.unlink(i);
        self.free_slot(i);
    }

    /// Deletes key entry `i` with all its fields.
    pub(crate) fn remove_key(&mut self, i: u32) {
        let s = self.slots[i as usize];
        if s.kind == Kind::Hash {
            let mut f = s.next;
            while f != NIL {
                let fs = self.slots[f as usize];
                self.free_block(fs.off);
                self.unlink(f);
                self.free_slot(f);
                f = fs.next;
            }
        }
        self.free_block(s.off);
        self.unlink(i);
        self.keys[s.db as usize] -= 1;
        self.free_slot(i);
    }

    /// Reclaims expired keys among the next few slots.
    pub(crate) fn sweep_some(&mut self, now: u64) {
        for _ in 0..SWEEP_PER_COMMAND.min(self.nslots) {
            self.cursor = (self.cursor + 1) % self.nslots;
            self.reclaim_if_expired(self.cursor as u32, now);
        }
    }

    /// Reclaims every expired key.
    pub(crate) fn sweep_all(&mut self, now: u64) {
        for i in 0..self.nslots {
            self.reclaim_if_expired(i as u32, now);
        }
    }

    fn reclaim_if_expired(&mut self, i: u32, now: u64) {
        let s = &self.slots[i as usize];
        if matches!(s.kind, Kind::Str | Kind::Hash) && Self::expired(s, now) {
            self.remove_key(i);
        }
    }

    /// Deletes every key of database `db`.
    pub(crate) fn clear_db(&mut self, db: u8) {
        if self.keys[db as usize] as usize == self.nslots - self.free_slots {
            self.clear_all();
            return;
        }
        for i in 0..self.nslots {
            let s = &self.slots[i];
            if s.db == db && matches!(s.kind, Kind::Str | Kind::Hash) {
                self.remove_key(i as u32);
            }
        }
    }

    /// Checks the internal invariants (tests): block accounting, links, counts.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut used = 0;
        let mut live = 0;
        for (i, s) in self.slots[..self.nslots].iter().enumerate() {
            if s.kind == Kind::Free {
                continue;
            }
            live += 1;
            let off = s.off as usize;
            assert_eq!(self.rd32(off + 4), i as u32, "block owner");
            assert_eq!(
                self.rd32(off) as usize,
                HDR + s.klen as usize + s.vlen as usize
            );
            used += HDR + s.klen as usize + s.vlen as usize;
        }
        assert_eq!(used, self.used);
        assert_eq!(live + self.free_slots, self.nslots);
        let keys: u32 = self.keys.iter().sum();
        let key_slots = self.slots[..self.nslots]
            .iter()
            .filter(|s| matches!(s.kind, Kind::Str | Kind::Hash))
            .count();
        assert_eq!(keys as usize, key_slots);
    }
}

/// A resource budget a command's plan is checked against: each step first frees, then takes.
pub(crate) struct Budget {
    used: usize,
    free_slots: usize,
    cap: usize,
    ok: bool,
}

impl Budget {
    pub(crate) fn new(store: &Store<'_>) -> Self {
        Budget {
            used: store.used,
            free_slots: store.free_slots,
            cap: store.cap,
            ok: true,
        }
    }

    /// One step: gives back `freed` (bytes, slots), then takes `taken` (bytes, slots).
    pub(crate) fn step(&mut self, freed: (usize, usize), taken: (usize, usize)) {
        let used = self.used - freed.0.min(self.used);
        let slots = self.free_slots + freed.1;
        if used + taken.0 > self.cap || slots < taken.1 {
            self.ok = false;
            return;
        }
        self.used = used + taken.0;
        self.free_slots = slots - taken.1;
    }

    /// Whether every step fitted.
    pub(crate) fn ok(&self) -> bool {
        self.ok
    }
}
