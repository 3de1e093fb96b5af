// A Mutex guard holds the lock for the CPU that took it: it must not move to another thread.
use kernel_locks::{ClhLock, Mutex};

static DATA: Mutex<ClhLock<2>, u32> = Mutex::new(ClhLock::new(), 0);

fn main() {
    let guard = DATA.lock(0);
    std::thread::spawn(move || drop(guard)).join().unwrap();
}
