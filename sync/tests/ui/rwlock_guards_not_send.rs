// RwLock guards hold the lock for the CPU that took them: they must not move to another thread.
use kernel_locks::{BrLock, RwLock};

static DATA: RwLock<BrLock<2>, u32> = RwLock::new(BrLock::new(), 0);

fn assert_send<T: Send>(_: T) {}

fn main() {
    assert_send(DATA.read(0));
    assert_send(DATA.write(1));
}
