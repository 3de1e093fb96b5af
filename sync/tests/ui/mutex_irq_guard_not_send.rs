// An interrupt-safe lock guard releases the lock and restores the interrupt state on the CPU
// that took it: it must not move to another thread.
use kernel_locks::{ClhLock, Mutex};

#[path = "common/never.rs"]
mod never;
use never::Never;

static DATA: Mutex<ClhLock<2>, u32> = Mutex::new(ClhLock::new(), 0);

fn main() {
    let guard = DATA.lock_irqsave::<Never>(0);
    std::thread::spawn(move || drop(guard)).join().unwrap();
}
