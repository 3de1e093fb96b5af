// The same mismatch outside a constant: the error comes when the constructor is instantiated.
use kernel_locks::{McsLock, RtmLock};

fn main() {
    let lock: RtmLock<McsLock<8>, 2> = RtmLock::new(McsLock::new());
    drop(lock);
}
