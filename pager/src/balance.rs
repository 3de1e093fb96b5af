//! Load balancing between pagers: MEM_LOW / MEM_HIGH thresholds, "memory low" requests,
//! donations recorded in a donor ledger, and "memory return" when usage drops.
//!
//! The seed paper designed this but did not evaluate it (§4.1): after an allocation a pager
//! whose free memory fell below MEM_LOW asks the others; pagers with more than MEM_HIGH free
//! donate; after a free, a pager above MEM_HIGH that holds donated memory sends it back. We add
//! what the paper left open, and change one thing:
//! - a borrower returns a loan as soon as it is entirely free and the borrower keeps MEM_LOW
//!   free pages without it (not only above MEM_HIGH): with the paper's rule a pager whose own
//!   partition is below MEM_HIGH would keep borrowed memory forever once idle;
//! - the **ledger** ([`Ledger`]) records every loan (lender, borrower, range), so memory goes
//!   back to the pager that lent it, and only whole free loans go back (a loan with a page still
//!   allocated waits until that page is freed);
//! - donors on the borrower's **memory node** are asked first (§4.3: "transfer within a NUMA
//!   zone first");
//! - a pager with *no* free memory left asks again with MEM_LOW as the donors' bar, so memory
//!   that exists somewhere is found before an allocation fails.
//!
//! The transfers ([`donate`], [`return_loans`]) work on two pagers and the ledger, however they
//! are locked: [`Cluster`] is the deterministic single-threaded model (all pagers in one array,
//! used by the tests), and the pager programs (`servers::memory`) and the threaded test lock
//! each pager and the ledger separately ([`crate::locked`]). On the kernel the messages are
//! [`Request::MemoryLow`](crate::protocol::Request::MemoryLow) and
//! [`Request::MemoryReturn`](crate::protocol::Request::MemoryReturn).
//!
//! Conservation: a transfer moves a range out of one allocator and into another. If the
//! receiver cannot take it (its bookkeeping is full), the range goes back to the sender; only if
//! *that* fails too is it reported as [`BalanceError::Stranded`] (owned by nobody, but named, so
//! the caller can keep it), which the tests check never happens.

use crate::alloc::{AllocError, FrameAllocator};
use crate::pager::Pager;
use crate::range::FrameRange;

/// The balancing thresholds, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// MEM_LOW: below this many free pages a pager asks for memory.
    pub low: usize,
    /// MEM_HIGH: above this many free pages a pager donates, and returns what it borrowed.
    pub high: usize,
    /// Pages asked for in one memory-low request.
    pub chunk: usize,
}

/// One donation: `range` lent by pager `lender` to pager `borrower`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Loan {
    /// The pager the memory belongs to.
    pub lender: usize,
    /// The pager holding it now.
    pub borrower: usize,
    /// The frames lent.
    pub range: FrameRange,
}

/// Why a balancing step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalanceError {
    /// An allocator refused.
    Alloc(AllocError),
    /// The ledger is full: no loan can be recorded, so none is made.
    LedgerFull,
    /// Neither side of a transfer could take the range back (both pools full): it is owned by
    /// nobody now. The caller must keep it.
    Stranded(FrameRange),
}

impl From<AllocError> for BalanceError {
    fn from(e: AllocError) -> Self {
        BalanceError::Alloc(e)
    }
}

/// The donor ledger: at most `L` outstanding loans.
#[derive(Clone, Debug)]
pub struct Ledger<const L: usize> {
    loans: [Loan; L],
    len: usize,
}

impl<const L: usize> Default for Ledger<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const L: usize> Ledger<L> {
    /// No loans.
    pub const fn new() -> Self {
        Self {
            loans: [Loan {
                lender: 0,
                borrower: 0,
                range: FrameRange::new(0, 0),
            }; L],
            len: 0,
        }
    }

    /// The outstanding loans.
    pub fn loans(&self) -> &[Loan] {
        &self.loans[..self.len]
    }

    /// Whether another loan fits.
    pub fn has_room(&self) -> bool {
        self.len < L
    }

    /// Pages pager `p` has borrowed and not yet returned.
    pub fn borrowed_by(&self, p: usize) -> usize {
        self.loans()
            .iter()
            .filter(|l| l.borrower == p)
            .map(|l| l.range.count)
            .sum()
    }

    fn record(&mut self, loan: Loan) -> Result<(), BalanceError> {
        if !self.has_room() {
            return Err(BalanceError::LedgerFull);
        }
        self.loans[self.len] = loan;
        self.len += 1;
        Ok(())
    }

    fn remove(&mut self, i: usize) {
        self.loans.copy_within(i + 1..self.len, i);
        self.len -= 1;
    }
}

/// Moves up to `pages` free pages from `lender` to `borrower` (one range: what the lender's
/// allocator hands out in one piece) and records the loan. Returns the range moved.
pub fn donate<const N: usize, const MO: usize, const L: usize>(
    lender: &mut Pager<N, MO>,
    borrower: &mut Pager<N, MO>,
    ledger: &mut Ledger<L>,
    pages: usize,
) -> Result<FrameRange, BalanceError> {
    if !ledger.has_room() {
        return Err(BalanceError::LedgerFull);
    }
    let range = lender.alloc.take_range(pages)?;
    if let Err(e) = borrower.alloc.add_range(range) {
        lender
            .alloc
            .add_range(range)
            .map_err(|_| BalanceError::Stranded(range))?;
        return Err(e.into());
    }
    ledger.record(Loan {
        lender: lender.id,
        borrower: borrower.id,
        range,
    })?;
    Ok(range)
}

/// Sends every loan from `lender` to `borrower` that is entirely free back to `lender`, as long
/// as the borrower keeps at least `keep` free pages without it, and deletes it from the ledger.
/// Returns the number of pages returned.
pub fn return_loans<const N: usize, const MO: usize, const L: usize>(
    borrower: &mut Pager<N, MO>,
    lender: &mut Pager<N, MO>,
    ledger: &mut Ledger<L>,
    keep: usize,
) -> Result<usize, BalanceError> {
    let mut returned = 0;
    let mut i = ledger.len;
    while i > 0 {
        i -= 1;
        let loan = ledger.loans[i];
        if loan.borrower != borrower.id || loan.lender != lender.id {
            continue;
        }
        if borrower.alloc.free_count() < keep.saturating_add(loan.range.count) {
            continue;
        }
        if borrower.alloc.withdraw(loan.range).is_err() {
            continue; // a page of it is still allocated (or cannot be split off yet)
        }
        if let Err(e) = lender.alloc.add_range(loan.range) {
            borrower
                .alloc
                .add_range(loan.range)
                .map_err(|_| BalanceError::Stranded(loan.range))?;
            return Err(e.into());
        }
        ledger.remove(i);
        returned += loan.range.count;
    }
    Ok(returned)
}

/// Two distinct elements of a slice, mutably.
fn two<T>(s: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert_ne!(a, b, "a pager does not trade with itself");
    if a < b {
        let (x, y) = s.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = s.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

/// `P` pagers and their ledger in one place: the deterministic model of balancing.
#[derive(Clone, Debug)]
pub struct Cluster<const P: usize, const N: usize, const MO: usize, const L: usize> {
    /// The pagers; pager `i` has id `i`.
    pub pagers: [Pager<N, MO>; P],
    /// Outstanding loans.
    pub ledger: Ledger<L>,
    /// When to ask and when to give.
    pub thresholds: Thresholds,
}

impl<const P: usize, const N: usize, const MO: usize, const L: usize> Cluster<P, N, MO, L> {
    /// A cluster of the given pagers (`pagers[i].id` must be `i`).
    pub fn new(pagers: [Pager<N, MO>; P], thresholds: Thresholds) -> Self {
        assert!(
            pagers.iter().enumerate().all(|(i, p)| p.id == i),
            "pager ids are their indices"
        );
        Self {
            pagers,
            ledger: Ledger::new(),
            thresholds,
        }
    }

    /// Allocates a page for pager `p`'s clients, asking the others for memory when it runs
    /// short (before failing, and after an allocation that leaves it below MEM_LOW).
    pub fn alloc(&mut self, p: usize) -> Result<usize, BalanceError> {
        let frame = match self.pagers[p].alloc.alloc() {
            Ok(f) => f,
            Err(AllocError::OutOfMemory) => {
                self.memory_low(p)?;
                self.pagers[p].alloc.alloc()?
            }
            Err(e) => return Err(e.into()),
        };
        if self.pagers[p].alloc.free_count() < self.thresholds.low {
            // Best effort: the allocation already succeeded.
            let _ = self.memory_low(p);
        }
        Ok(frame)
    }

    /// Frees a page of pager `p`; if it holds borrowed memory, it returns every loan that is
    /// entirely free and that it can spare while keeping MEM_LOW free pages.
    pub fn free(&mut self, p: usize, frame: usize) -> Result<(), BalanceError> {
        self.pagers[p].alloc.free(frame)?;
        if self.ledger.borrowed_by(p) > 0 && self.memory_return(p)? > 0 {
            self.settle()?;
        }
        Ok(())
    }

    /// Lets every borrower return its free loans until none can. Needed because a
    /// borrower may have lent borrowed memory on: the first loan can go home only after the
    /// second did, and a return may lift the receiver above MEM_HIGH in turn.
    pub fn settle(&mut self) -> Result<usize, BalanceError> {
        let mut total = 0;
        loop {
            let mut pass = 0;
            for p in 0..P {
                if self.ledger.borrowed_by(p) > 0 {
                    pass += self.memory_return(p)?;
                }
            }
            if pass == 0 {
                return Ok(total);
            }
            total += pass;
        }
    }

    /// "Memory low" from pager `p`: donors above MEM_HIGH give down to MEM_HIGH, same node first;
    /// if `p` has nothing free after that, donors above MEM_LOW give down to MEM_LOW. Returns the
    /// pages received.
    pub fn memory_low(&mut self, p: usize) -> Result<usize, BalanceError> {
        let want = self.thresholds.chunk.max(1);
        let mut got = 0;
        for bar in [self.thresholds.high, self.thresholds.low] {
            if bar == self.thresholds.low && self.pagers[p].alloc.free_count() > 0 {
                break;
            }
            let node = self.pagers[p].node;
            for same_node in [true, false] {
                for q in 0..P {
                    if q == p || (self.pagers[q].node == node) != same_node {
                        continue;
                    }
                    while got < want {
                        let spare = self.pagers[q].alloc.free_count().saturating_sub(bar);
                        if spare == 0 {
                            break;
                        }
                        let (lender, borrower) = two(&mut self.pagers, q, p);
                        match donate(lender, borrower, &mut self.ledger, spare.min(want - got)) {
                            Ok(r) => got += r.count,
                            Err(BalanceError::Stranded(r)) => {
                                return Err(BalanceError::Stranded(r))
                            }
                            Err(_) => break,
                        }
                    }
                }
            }
        }
        Ok(got)
    }

    /// "Memory return" from pager `p`: every loan it holds that is entirely free goes home, as
    /// long as `p` keeps MEM_LOW free pages. Returns the pages returned.
    pub fn memory_return(&mut self, p: usize) -> Result<usize, BalanceError> {
        let mut returned = 0;
        for q in (0..P).filter(|&q| q != p) {
            let (borrower, lender) = two(&mut self.pagers, p, q);
            returned += return_loans(borrower, lender, &mut self.ledger, self.thresholds.low)?;
        }
        Ok(returned)
    }

    /// Checks conservation: every pager's allocator is sound, no frame is owned by two pagers,
    /// `total` frames are owned in all, and every loan lies in its borrower's memory.
    pub fn check(&self, total: usize) -> Result<(), &'static str> {
        let mut sum = 0;
        for (i, a) in self.pagers.iter().enumerate() {
            a.alloc.check()?;
            sum += a.alloc.owned_count();
            for b in &self.pagers[i + 1..] {
                for r in a.alloc.owned_ranges() {
                    if b.alloc.owned_ranges().iter().any(|s| s.overlaps(r)) {
                        return Err("a frame has two owners");
                    }
                }
            }
        }
        if sum != total {
            return Err("frames lost or created");
        }
        for loan in self.ledger.loans() {
            let holder = &self.pagers[loan.borrower].alloc;
            if !holder.owned_ranges().iter().any(|r| r.covers(&loan.range)) {
                return Err("a loan is not in its borrower's memory");
            }
        }
        Ok(())
    }
}
