//! The key space: a slot table (entries and hash buckets) and a compacting byte arena.
//!
//! # Memory model
//!
//! All memory is given by the caller at construction and never grows:
//!
//! * an **arena** `&mut [u8]` holds every byte of every key and value, and of the fields,
//!   elements, members and entries of the collections. Each entry owns one *block*: an 8-byte
//!   header (block length, owning slot) followed by the key (or field name) and the value.
//!   Blocks are bump-allocated; a freed block becomes a hole, and when the bump pointer reaches
//!   the end while the holes together have room, the arena is **compacted** (live blocks slide
//!   down, their slots' offsets are updated through the header's owner field). So there is no
//!   fragmentation: a request fits exactly when `used + needed <= capacity`, and `used_memory`
//!   is an exact, deterministic number. The cost is an occasional pass over the arena, amortised
//!   over the bytes freed since the last one; near a full arena compactions get frequent, the
//!   usual price of a compacting heap.
//! * a **slot table** `&mut [Slot]` bounds the number of entries (every key takes one slot, and
//!   so does every hash field, list element, set or sorted-set member and stream entry). Slot
//!   `i` also holds the head of hash bucket `i` (separate chaining, as many buckets as slots, so
//!   the load factor never exceeds 1 and deleting is a plain unlink). Free slots form a list.
//!
//! Why not an allocator: the server runs as a user program on the microkernel, one instance per
//! core, with a fixed memory grant; a global allocator would add a second, hidden memory budget
//! with its own fragmentation, and an allocation failure in the middle of a command would leave
//! it half applied. Here every command first computes exactly what it will need (bytes and
//! slots, the peak along its steps), answers `-OOM` if that does not fit, and otherwise applies
//! steps that cannot fail. An acknowledged write is never evicted (there is no eviction policy:
//! the behaviour of Redis's `maxmemory-policy noeviction`).
//!
//! # Collections
//!
//! A hash, list, set, sorted set or stream is a key entry (its block holds the key, nothing
//! else) plus one *child* entry (a slot and a block) per field, element, member or stream
//! entry, doubly linked in order from the key's entry (which also counts them):
//!
//! * a **hash field**'s block holds its name and value; fields are also in the bucket table,
//!   keyed by (hash's slot, field name), so `HGET`/`HSET` of one field cost O(1); they are
//!   linked in insertion order, the order `HGETALL` answers in (as Redis does for small hashes);
//! * a **list element**'s block holds the element as its value (no key): pushing and popping at
//!   either end is O(1), reaching the `i`-th element O(min(i, n - i)); moving an element to
//!   another list (`LMOVE`) relinks its entry, O(1), without copying it;
//! * a **set member**'s block holds the member as its key, and the member is in the bucket
//!   table (keyed like a hash field), so `SADD`/`SISMEMBER`/`SREM` cost O(1); members are linked
//!   in insertion order;
//! * a **sorted-set member** is a set member whose slot also holds its score (the `expire`
//!   field, which only keys use otherwise, holds the score's bits), linked in (score, member)
//!   order. The order is a plain linked list, not Redis's skip list: inserting or re-scoring a
//!   member walks to its place, O(n), and so do `ZRANK` and reaching a rank, while looking a
//!   member up (`ZSCORE`) and popping the lowest or highest (`ZPOPMIN`/`ZPOPMAX`) are O(1). A
//!   skip list would need a variable number of links per member, which the fixed-size slots
//!   cannot hold. The benchmarks this server runs under keep their sorted sets small
//!   (redis-benchmark's `ZADD` test adds one member over and over; the project's YCSB binding
//!   keeps no index); a sorted set of `n` members filled at random scores costs O(n²) in all;
//! * a **stream entry**'s block holds its ID as the key (16 bytes: milliseconds and sequence
//!   number, big-endian, so that bytes and IDs compare alike) and its fields as the value (each
//!   field name and value as a 4-byte little-endian length and the bytes); entries are linked in
//!   ID order, which is the order they were added in.
//!
//! A collection whose last child goes is deleted with it, as Redis deletes an emptied key
//! (streams cannot be emptied: there is no `XDEL` or `XTRIM`).
//!
//! Expiry times are absolute milliseconds of the caller's clock. An expired key is deleted when
//! a command looks it up, a few slots are swept on every command, and the whole table is swept
//! before a write is refused for lack of memory and before `DBSIZE`/`INFO` count keys.

/// Where bytes lie in the arena: (offset, length).
pub(crate) type Span = (usize, usize);

/// What [`Store::scratch`] lends: the live blocks, the free bytes asked for, and where the
/// values asked about lie among the live blocks.
pub(crate) struct Scratch<'s, const N: usize> {
    pub(crate) live: &'s [u8],
    pub(crate) free: &'s mut [u8],
    pub(crate) spans: [Option<Span>; N],
}

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
    List,
    Set,
    ZSet,
    Stream,
    /// A hash's field.
    Field,
    /// A list's element.
    Elem,
    /// A set's member.
    Member,
    /// A sorted set's member.
    ZMember,
    /// A stream's entry.
    Entry,
}

impl Kind {
    /// Whether the entry is a key (of any type), not a collection's child.
    pub(crate) fn is_key(self) -> bool {
        matches!(
            self,
            Kind::Str | Kind::Hash | Kind::List | Kind::Set | Kind::ZSet | Kind::Stream
        )
    }

    /// Whether the entry is a child that is found by its name through the bucket table.
    fn is_named_child(self) -> bool {
        matches!(self, Kind::Field | Kind::Member | Kind::ZMember)
    }

    /// The kind of a collection's children (`Free` for a string).
    fn child(self) -> Kind {
        match self {
            Kind::Hash => Kind::Field,
            Kind::List => Kind::Elem,
            Kind::Set => Kind::Member,
            Kind::ZSet => Kind::ZMember,
            Kind::Stream => Kind::Entry,
            _ => Kind::Free,
        }
    }

    /// The name `TYPE` answers for a key of this kind.
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
            _ => "none",
        }
    }
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
    /// Keys: absolute expiry time in ms, 0 for none. Sorted-set members: the score's bits.
    pub(crate) expire: u64,
    /// Collection: first child. Child: next sibling.
    pub(crate) next: u32,
    /// Collection: last child. Child: previous sibling.
    pub(crate) prev: u32,
    /// Child: the collection's slot.
    pub(crate) parent: u32,
    /// Collection: number of children.
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
    /// State of the generator `SPOP` and `SRANDMEMBER` pick members with (xorshift64*).
    rng: u64,
    /// The values `CONFIG SET` gave the tunable parameters.
    pub(crate) config: crate::admin::Config,
    /// Client IDs handed out so far (`HELLO`'s `id`; see [`crate::Session`]).
    pub(crate) clients: u64,
}

/// A function that writes a section of the `INFO` reply that the embedding server knows and the
/// store does not (the network server writes its cores' busy and idle cycles there). It is
/// called once per `INFO`, into a buffer of [`INFO_SECTION_MAX`] bytes; a section that does not
/// fit is left out whole (the reply then says so in `info_section_error`).
pub type InfoSection = fn(&mut dyn core::fmt::Write) -> core::fmt::Result;

/// The most bytes an [`InfoSection`] may write.
pub const INFO_SECTION_MAX: usize = 1024;

/// FNV-1a over `bytes`, from `h`.
pub(crate) fn fnv(mut h: u32, bytes: &[u8]) -> u32 {
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
    /// at most `slots.len()` entries (each key, and each hash field, list element, set member,
    /// sorted-set member and stream entry, takes one).
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
            rng: 0x9e37_79b9_7f4a_7c15,
            config: crate::admin::Config::new(),
            clients: 0,
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

    /// Slots in use (keys, and the fields, elements, members and entries of collections).
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

    /// Transient working memory for a command that writes nothing (`LCS`'s table): `need` bytes
    /// of the arena's free space (compacting first if the holes are needed), beside the live
    /// blocks, which stay readable; with where the values of `entries` lie among them (offset
    /// and length). `None` when the free space is smaller.
    pub(crate) fn scratch<const N: usize>(
        &mut self,
        need: usize,
        entries: [Option<u32>; N],
    ) -> Option<Scratch<'_, N>> {
        if self.used.checked_add(need)? > self.cap {
            return None;
        }
        if self.top + need > self.cap {
            self.compact();
        }
        let spans = entries.map(|e| {
            e.map(|i| {
                let s = &self.slots[i as usize];
                (s.off as usize + HDR + s.klen as usize, s.vlen as usize)
            })
        });
        let (live, free) = self.arena.split_at_mut(self.top);
        Some(Scratch {
            live,
            free: &mut free[..need],
            spans,
        })
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

    /// The key (field name, member, stream entry ID) of entry `i`.
    pub(crate) fn key_of(&self, i: u32) -> &[u8] {
        let s = &self.slots[i as usize];
        let at = s.off as usize + HDR;
        self.arena.get(at..at + s.klen as usize).unwrap_or(&[])
    }

    /// The value of string, field, list element or stream entry `i`.
    pub(crate) fn val_of(&self, i: u32) -> &[u8] {
        let s = &self.slots[i as usize];
        let at = s.off as usize + HDR + s.klen as usize;
        self.arena.get(at..at + s.vlen as usize).unwrap_or(&[])
    }

    /// Whether key slot `s` expired at time `now`.
    pub(crate) fn expired(s: &Slot, now: u64) -> bool {
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
            if s.hash == h && s.kind.is_key() && s.db == db && self.key_of(cur) == key {
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

    /// The field or member named `field` of hash, set or sorted set `parent`.
    pub(crate) fn find_field(&self, parent: u32, field: &[u8]) -> Option<u32> {
        if self.nslots == 0 {
            return None;
        }
        let h = field_hash(parent, field);
        let mut cur = self.slots[self.bucket(h)].head;
        while cur != NIL {
            let s = &self.slots[cur as usize];
            if s.hash == h
                && s.kind.is_named_child()
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
        let mut f = if s.kind == Kind::Str { NIL } else { s.next };
        while f != NIL {
            let fs = &self.slots[f as usize];
            bytes += HDR + fs.klen as usize + fs.vlen as usize;
            slots += 1;
            f = fs.next;
        }
        (bytes, slots)
    }

    /// Stores a new entry's block (not yet in the bucket table); the caller has checked the
    /// resources.
    /// Its value has `vlen` bytes, which `fill` writes.
    fn new_entry(
        &mut self,
        kind: Kind,
        hash: u32,
        key: &[u8],
        vlen: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Option<u32> {
        let i = self.alloc_slot()?;
        let Some(off) = self.alloc_block(i, HDR + key.len() + vlen) else {
            self.free_slot(i);
            return None;
        };
        let at = off as usize + HDR;
        self.arena[at..at + key.len()].copy_from_slice(key);
        fill(&mut self.arena[at + key.len()..at + key.len() + vlen]);
        let head = self.slots[i as usize].head;
        self.slots[i as usize] = Slot {
            head,
            kind,
            hash,
            off,
            klen: key.len() as u32,
            vlen: vlen as u32,
            ..Slot::EMPTY
        };
        Some(i)
    }

    /// Inserts a new string (`val = Some`) or empty collection of kind `kind`; the caller has
    /// checked that it is absent and that the resources suffice.
    pub(crate) fn insert_key(
        &mut self,
        db: u8,
        kind: Kind,
        key: &[u8],
        val: Option<&[u8]>,
        expire: u64,
    ) -> Option<u32> {
        let val = val.unwrap_or(&[]);
        self.insert_key_with(db, kind, key, val.len(), |d| d.copy_from_slice(val), expire)
    }

    /// [`Store::insert_key`] with a value of `vlen` bytes that `fill` writes in place.
    pub(crate) fn insert_key_with(
        &mut self,
        db: u8,
        kind: Kind,
        key: &[u8],
        vlen: usize,
        fill: impl FnOnce(&mut [u8]),
        expire: u64,
    ) -> Option<u32> {
        let i = self.new_entry(kind, key_hash(db, key), key, vlen, fill)?;
        self.link(i);
        let s = &mut self.slots[i as usize];
        s.db = db;
        s.expire = expire;
        self.keys[db as usize] += 1;
        Some(i)
    }

    /// Appends field `field` = `val` to hash `parent`; the caller has checked the resources.
    pub(crate) fn insert_field(&mut self, parent: u32, field: &[u8], val: &[u8]) -> Option<u32> {
        self.insert_child(parent, field, val, NIL)
    }

    /// Inserts a child of collection `parent` (a field, element, member or entry, by the
    /// collection's kind) with key `key` and value `val`, before child `before` (at the end for
    /// [`NIL`]); the caller has checked the resources (and, for a named child, that it is new).
    pub(crate) fn insert_child(
        &mut self,
        parent: u32,
        key: &[u8],
        val: &[u8],
        before: u32,
    ) -> Option<u32> {
        self.insert_child_with(parent, key, val.len(), |d| d.copy_from_slice(val), before)
    }

    /// [`Store::insert_child`] with a value of `vlen` bytes that `fill` writes in place.
    pub(crate) fn insert_child_with(
        &mut self,
        parent: u32,
        key: &[u8],
        vlen: usize,
        fill: impl FnOnce(&mut [u8]),
        before: u32,
    ) -> Option<u32> {
        let kind = self.slots[parent as usize].kind.child();
        let i = self.new_entry(kind, field_hash(parent, key), key, vlen, fill)?;
        self.slots[i as usize].parent = parent;
        if kind.is_named_child() {
            self.link(i);
        }
        self.attach(i, before);
        Some(i)
    }

    /// Puts child `i` (not in its collection's order) just before its sibling `before` (at the
    /// end for [`NIL`]).
    fn attach(&mut self, i: u32, before: u32) {
        let parent = self.slots[i as usize].parent;
        let prev = match before {
            NIL => self.slots[parent as usize].prev,
            b => self.slots[b as usize].prev,
        };
        self.slots[i as usize].prev = prev;
        self.slots[i as usize].next = before;
        match prev {
            NIL => self.slots[parent as usize].next = i,
            p => self.slots[p as usize].next = i,
        }
        match before {
            NIL => self.slots[parent as usize].prev = i,
            b => self.slots[b as usize].prev = i,
        }
        self.slots[parent as usize].count += 1;
    }

    /// Moves child `i` of a collection to just before its sibling `before` (to the end for
    /// [`NIL`]), as a sorted set does with a member whose score changed.
    pub(crate) fn move_child(&mut self, i: u32, before: u32) {
        if i == before {
            return;
        }
        self.detach(i);
        self.attach(i, before);
    }

    /// Moves child `i` into collection `parent` (of the kind of `i`'s collection), just before
    /// `parent`'s child `before` (at the end for [`NIL`]), keeping its entry and block, as
    /// `LMOVE` does with an element: no resources are taken. The collection `i` leaves stays
    /// even when it becomes empty (the caller deletes it, see [`Store::remove_child_or_key`]);
    /// for a named child, the caller has checked that `parent` has none of its name.
    pub(crate) fn move_child_to(&mut self, i: u32, parent: u32, before: u32) {
        self.detach(i);
        let named = self.slots[i as usize].kind.is_named_child();
        if named {
            self.unlink(i);
        }
        self.slots[i as usize].parent = parent;
        self.slots[i as usize].hash = field_hash(parent, self.key_of(i));
        if named {
            self.link(i);
        }
        self.attach(i, before);
    }

    /// Takes child `i` out of its collection's order (and count), keeping its entry.
    fn detach(&mut self, i: u32) {
        let s = self.slots[i as usize];
        let p = s.parent as usize;
        match s.prev {
            NIL => self.slots[p].next = s.next,
            prev => self.slots[prev as usize].next = s.next,
        }
        match s.next {
            NIL => self.slots[p].prev = s.prev,
            next => self.slots[next as usize].prev = s.prev,
        }
        self.slots[p].count -= 1;
    }

    /// The `n`-th child of collection `parent` (from the end for a negative `n`: -1 is the
    /// last), walking from the nearer end.
    pub(crate) fn nth_child(&self, parent: u32, n: i64) -> Option<u32> {
        let p = &self.slots[parent as usize];
        let count = i64::from(p.count);
        let n = if n < 0 { count + n } else { n };
        if n < 0 || n >= count {
            return None;
        }
        let (mut cur, forward, steps) = if n <= count / 2 {
            (p.next, true, n)
        } else {
            (p.prev, false, count - 1 - n)
        };
        for _ in 0..steps {
            let s = &self.slots[cur as usize];
            cur = if forward { s.next } else { s.prev };
        }
        Some(cur)
    }

    // ---- sorted sets: results built aside ----

    /// Inserts an empty collection of kind `kind` named `key` in database `db` that no lookup
    /// by name finds (a command's result being built, beside a key of the same name) until
    /// [`Store::list_key`] makes it a key like any other; `None` when the arena or the slot
    /// table is full. [`Store::remove_key`] deletes it either way.
    pub(crate) fn insert_unlisted_key(&mut self, db: u8, kind: Kind, key: &[u8]) -> Option<u32> {
        let i = self.insert_key(db, kind, key, None, 0)?;
        self.unlink(i);
        Some(i)
    }

    /// Makes key `i` of [`Store::insert_unlisted_key`] found by its name; the caller has
    /// deleted any other key of that name.
    pub(crate) fn list_key(&mut self, i: u32) {
        self.link(i);
    }

    /// Appends to collection `parent` a child named as entry `from` (a child of another
    /// collection), with an empty value; `None` (nothing changed) when the arena or the slot
    /// table is full. The caller has checked that the name is new in `parent`.
    pub(crate) fn append_child_named_as(&mut self, parent: u32, from: u32) -> Option<u32> {
        let klen = self.slots[from as usize].klen as usize;
        let i = self.alloc_slot()?;
        let Some(off) = self.alloc_block(i, HDR + klen) else {
            self.free_slot(i);
            return None;
        };
        // The allocation may have compacted the arena: `from`'s offset is read after it.
        let (src, at) = (
            self.slots[from as usize].off as usize + HDR,
            off as usize + HDR,
        );
        self.arena.copy_within(src..src + klen, at);
        let hash = field_hash(parent, &self.arena[at..at + klen]);
        let kind = self.slots[parent as usize].kind.child();
        let head = self.slots[i as usize].head;
        self.slots[i as usize] = Slot {
            head,
            kind,
            hash,
            off,
            klen: klen as u32,
            parent,
            ..Slot::EMPTY
        };
        if kind.is_named_child() {
            self.link(i);
        }
        self.attach(i, NIL);
        Some(i)
    }

    /// The random generator's state, to replay the same draws with [`Store::set_rng_state`].
    pub(crate) fn rng_state(&self) -> u64 {
        self.rng
    }

    /// Restores a state [`Store::rng_state`] returned.
    pub(crate) fn set_rng_state(&mut self, state: u64) {
        self.rng = state;
    }

    /// A pseudo-random number below `n` (0 for `n = 0`).
    pub(crate) fn random_below(&mut self, n: usize) -> usize {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        if n == 0 {
            0
        } else {
            (r % n as u64) as usize
        }
    }

    /// The value of entry `i`, to write to in place.
    pub(crate) fn value_mut(&mut self, i: u32) -> &mut [u8] {
        let s = &self.slots[i as usize];
        let at = s.off as usize + HDR + s.klen as usize;
        let len = s.vlen as usize;
        self.arena.get_mut(at..at + len).unwrap_or(&mut [])
    }

    /// Moves entry `i` into a new block holding `key` and a value of `vlen` bytes, of which the
    /// first ones are the old value's (as many as fit) and the rest zeros; returns the value to
    /// be written to. Both blocks are live at once: the caller has checked that the new one fits
    /// beside the old one. The key entry's bucket is the caller's to update when the key changes.
    pub(crate) fn rewrite_block(&mut self, i: u32, key: &[u8], vlen: usize) -> &mut [u8] {
        let len = HDR + key.len() + vlen;
        if self.used + len > self.cap {
            return &mut []; // Unreachable after the caller's check.
        }
        // Compacting first, while the old block is live, keeps its bytes (and moves its offset);
        // then the new block goes at the top without another compaction.
        if self.top + len > self.cap {
            self.compact();
        }
        let old = self.slots[i as usize];
        let Some(off) = self.alloc_block(i, len) else {
            return &mut [];
        };
        let (from, to) = (
            old.off as usize + HDR + old.klen as usize,
            off as usize + HDR,
        );
        self.arena[to..to + key.len()].copy_from_slice(key);
        let keep = (old.vlen as usize).min(vlen);
        self.arena.copy_within(from..from + keep, to + key.len());
        self.arena[to + key.len() + keep..to + key.len() + vlen].fill(0);
        self.free_block(old.off);
        let s = &mut self.slots[i as usize];
        s.off = off;
        s.klen = key.len() as u32;
        s.vlen = vlen as u32;
        &mut self.arena[to + key.len()..to + key.len() + vlen]
    }

    /// Gives key entry `i` of database `db` the name `key`, keeping its value, children and
    /// expiry; the caller has checked that the new block fits beside the old one and that no
    /// other key has the name.
    pub(crate) fn rename_key(&mut self, i: u32, db: u8, key: &[u8]) {
        let vlen = self.slots[i as usize].vlen as usize;
        self.unlink(i);
        self.rewrite_block(i, key, vlen);
        self.slots[i as usize].hash = key_hash(db, key);
        self.link(i);
    }

    /// [`Store::rename_key`] onto the existing key `dst`, which is deleted: the renamed key takes
    /// `dst`'s slot, so that the name keeps its slot (which a `SCAN` cursor relies on). Costs
    /// O(children of `i`), whose links to their collection change.
    pub(crate) fn rename_over(&mut self, i: u32, dst: u32, db: u8, key: &[u8]) {
        self.remove_key(dst);
        self.rename_key(i, db, key);
        // `dst`'s slot is the free list's head now.
        self.unlink(i);
        self.take_freed_slot(i);
    }

    /// Moves key entry `i`, which is out of the bucket table, with its children into the slot
    /// freed last (the head of the free list), and links it there. Costs O(children of `i`),
    /// whose links to their collection change.
    fn take_freed_slot(&mut self, i: u32) {
        let Some(x) = self.alloc_slot() else {
            return; // Unreachable: the callers have just freed a slot.
        };
        let head = self.slots[x as usize].head;
        self.slots[x as usize] = Slot {
            head,
            ..self.slots[i as usize]
        };
        let off = self.slots[x as usize].off as usize;
        self.wr32(off + 4, x);
        let s = self.slots[x as usize];
        let mut c = if s.kind == Kind::Str { NIL } else { s.next };
        while c != NIL {
            self.slots[c as usize].parent = x;
            if self.slots[c as usize].kind.is_named_child() {
                self.unlink(c);
                self.slots[c as usize].hash = field_hash(x, self.key_of(c));
                self.link(c);
            }
            c = self.slots[c as usize].next;
        }
        self.link(x);
        self.free_slot(i);
    }

    /// A live key of database `db` drawn uniformly, deleting the expired keys met on the way:
    /// a few random slots are tried first (enough when keys fill much of the table), then the
    /// database's keys are counted and one of them is taken at a random rank.
    pub(crate) fn random_key(&mut self, db: u8, now: u64) -> Option<u32> {
        const TRIES: usize = 32;
        let is_ours = |s: &Slot| s.kind.is_key() && s.db == db;
        for _ in 0..TRIES {
            if self.keys[db as usize] == 0 {
                return None;
            }
            let i = self.random_below(self.nslots) as u32;
            let s = &self.slots[i as usize];
            if is_ours(s) {
                if !Self::expired(s, now) {
                    return Some(i);
                }
                self.remove_key(i);
            }
        }
        for i in 0..self.nslots as u32 {
            let s = &self.slots[i as usize];
            if is_ours(s) && Self::expired(s, now) {
                self.remove_key(i);
            }
        }
        let n = self.keys[db as usize] as usize;
        if n == 0 {
            return None;
        }
        let rank = self.random_below(n);
        (0..self.nslots as u32)
            .filter(|&i| is_ours(&self.slots[i as usize]))
            .nth(rank)
    }

    /// Moves key entry `i` (with its children and expiry) to database `db`; the caller has
    /// checked that `db` has no key of its name.
    pub(crate) fn move_key(&mut self, i: u32, db: u8) {
        self.unlink(i);
        let old = self.slots[i as usize].db;
        self.keys[old as usize] -= 1;
        self.slots[i as usize].db = db;
        self.slots[i as usize].hash = key_hash(db, self.key_of(i));
        self.keys[db as usize] += 1;
        self.link(i);
    }

    /// Exchanges the keys of databases `a` and `b` (`SWAPDB`).
    pub(crate) fn swap_dbs(&mut self, a: u8, b: u8) {
        if a == b {
            return;
        }
        for i in 0..self.nslots as u32 {
            let s = &self.slots[i as usize];
            if s.kind.is_key() && (s.db == a || s.db == b) {
                let to = if s.db == a { b } else { a };
                self.move_key(i, to);
            }
        }
    }

    /// Bytes and slots a copy of key `i` named `key` takes ([`Store::copy_key`]).
    pub(crate) fn copy_footprint(&self, i: u32, key: &[u8]) -> (usize, usize) {
        let (bytes, slots) = self.footprint(i);
        (
            bytes - self.slots[i as usize].klen as usize + key.len(),
            slots,
        )
    }

    /// Copies key entry `i` with its value and children (in order, with their scores) as key
    /// `key` of database `db`, expiring at `expire`; the caller has checked that the name is
    /// free there and that [`Store::copy_footprint`] fits.
    pub(crate) fn copy_key(&mut self, i: u32, db: u8, key: &[u8], expire: u64) -> Option<u32> {
        let src = self.slots[i as usize];
        let dst =
            self.insert_key_with(db, src.kind, key, src.vlen as usize, |d| d.fill(0), expire)?;
        // Blocks may have moved in a compaction: offsets are read after the allocation.
        let (f, t) = (&self.slots[i as usize], &self.slots[dst as usize]);
        let start = f.off as usize + HDR + f.klen as usize;
        let at = t.off as usize + HDR + t.klen as usize;
        self.arena.copy_within(start..start + f.vlen as usize, at);
        let mut c = if src.kind == Kind::Str { NIL } else { src.next };
        while c != NIL {
            self.copy_child(c, dst)?;
            c = self.slots[c as usize].next;
        }
        Some(dst)
    }

    /// Appends a copy of child entry `c` (its key, value and score) to collection `dst`, of
    /// `c`'s collection's kind; the caller has checked the resources (and, for a named child,
    /// that `dst` has none of its name).
    pub(crate) fn copy_child(&mut self, c: u32, dst: u32) -> Option<u32> {
        let cs = self.slots[c as usize];
        let hash = field_hash(dst, self.key_of(c));
        let len = cs.klen as usize + cs.vlen as usize;
        let n = self.alloc_slot()?;
        let Some(off) = self.alloc_block(n, HDR + len) else {
            self.free_slot(n);
            return None;
        };
        let head = self.slots[n as usize].head;
        self.slots[n as usize] = Slot {
            head,
            kind: cs.kind,
            hash,
            off,
            klen: cs.klen,
            vlen: cs.vlen,
            expire: cs.expire,
            parent: dst,
            ..Slot::EMPTY
        };
        // `c`'s block may have moved in a compaction: its offset is read after the allocation.
        let from = self.slots[c as usize].off as usize + HDR;
        self.arena.copy_within(from..from + len, off as usize + HDR);
        if cs.kind.is_named_child() {
            self.link(n);
        }
        self.attach(n, NIL);
        Some(n)
    }

    // ---- sets: the results of SINTERSTORE, SUNIONSTORE and SDIFFSTORE ----

    /// Creates an empty set named `key` of database `db` that no lookup finds (it is out of
    /// the bucket table and the key count) until [`Store::publish_set`] puts it in the key
    /// space: a result being built while a key of its name may still be read. The caller has
    /// checked the resources.
    pub(crate) fn insert_unpublished_set(&mut self, db: u8, key: &[u8]) -> Option<u32> {
        let i = self.new_entry(Kind::Set, key_hash(db, key), key, 0, |_| ())?;
        self.slots[i as usize].db = db;
        Some(i)
    }

    /// Puts set `i` of [`Store::insert_unpublished_set`] in the key space, deleting `old`, the
    /// key of its name (if any), whose slot it takes, so that the name keeps its slot.
    pub(crate) fn publish_set(&mut self, i: u32, old: Option<u32>) {
        let db = self.slots[i as usize].db;
        self.keys[db as usize] += 1;
        match old {
            Some(old) => {
                self.remove_key(old);
                self.take_freed_slot(i);
            }
            None => self.link(i),
        }
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

    /// Deletes child entry `i` from its collection (not the collection itself when it becomes
    /// empty: see [`Store::remove_child_or_key`]).
    pub(crate) fn remove_field(&mut self, i: u32) {
        self.detach(i);
        self.drop_child(i);
    }

    /// Deletes child entry `i`, and its collection too if that became empty.
    pub(crate) fn remove_child_or_key(&mut self, i: u32) {
        let parent = self.slots[i as usize].parent;
        self.remove_field(i);
        if self.slots[parent as usize].count == 0 {
            self.remove_key(parent);
        }
    }

    /// Frees child entry `i`'s block and slot (it is out of its collection's order already).
    fn drop_child(&mut self, i: u32) {
        let s = self.slots[i as usize];
        self.free_block(s.off);
        if s.kind.is_named_child() {
            self.unlink(i);
        }
        self.free_slot(i);
    }

    /// Deletes key entry `i` with all its children.
    pub(crate) fn remove_key(&mut self, i: u32) {
        let s = self.slots[i as usize];
        if s.kind != Kind::Str {
            let mut f = s.next;
            while f != NIL {
                let next = self.slots[f as usize].next;
                self.drop_child(f);
                f = next;
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
        if s.kind.is_key() && Self::expired(s, now) {
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
            if s.db == db && s.kind.is_key() {
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
            .filter(|s| s.kind.is_key())
            .count();
        assert_eq!(keys as usize, key_slots);
        // Every collection's children: linked both ways, of the collection's kind, counted, and
        // a collection is never empty.
        let mut children = 0;
        for (i, s) in self.slots[..self.nslots].iter().enumerate() {
            if !s.kind.is_key() || s.kind == Kind::Str {
                continue;
            }
            let (mut n, mut prev, mut cur) = (0, NIL, s.next);
            while cur != NIL {
                let c = &self.slots[cur as usize];
                assert_eq!(c.kind, s.kind.child());
                assert_eq!(c.parent, i as u32);
                assert_eq!(c.prev, prev);
                if c.kind.is_named_child() {
                    assert_eq!(self.find_field(i as u32, self.key_of(cur)), Some(cur));
                }
                n += 1;
                prev = cur;
                cur = c.next;
            }
            assert_eq!(s.prev, prev);
            assert_eq!(n, s.count);
            assert!(n > 0, "an empty collection is deleted");
            children += n as usize;
        }
        assert_eq!(keys as usize + children, live);
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
