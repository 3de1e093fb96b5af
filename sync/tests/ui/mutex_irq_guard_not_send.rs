// An interrupt-safe lock guard releases the lock and restores the interrupt state on the CPU
// that took it: it must not move to another thread.
use kernel_locks::irq::Interrupts;
use kernel_locks::{ClhLock, Mutex};

/// A mask that masks nothing, enough to build the guards.
struct Never;

// SAFETY: no interrupts exist in this program.
unsafe impl Interrupts for Never {
    type State = ();
    fn save_and_disable() {}
    unsafe fn restore(_: ()) {}
    fn are_enabled() -> bool {
        false
    }
}

static DATA: Mutex<ClhLock<2>, u32> = Mutex::new(ClhLock::new(), 0);

fn main() {
    let guard = DATA.lock_irqsave::<Never>(0);
    std::thread::spawn(move || drop(guard)).join().unwrap();
}
