// `RtmLock<L, N>` names the CPU count twice, in `N` and in a fallback with per-CPU state: the two
// must agree. Here the CLH fallback has nodes for 2 CPUs and the elision slots are for 4.
use kernel_locks::{ClhLock, RtmLock};

static BKL: RtmLock<ClhLock<2>, 4> = RtmLock::new(ClhLock::new());

fn main() {
    let _ = &BKL;
}
