// The counts that agree compile: a fallback with the same bound, and one without a bound of its
// own (a ticket lock), under any `N`.
use kernel_locks::{ClhLock, KernelLock, RtmLock, TicketLock};

static BKL: RtmLock<ClhLock<4>, 4> = RtmLock::new(ClhLock::new());

fn main() {
    let ticket: RtmLock<TicketLock, 2> = RtmLock::new(TicketLock::new());
    assert_eq!((BKL.max_cpus(), ticket.max_cpus()), (4, 2));
}
