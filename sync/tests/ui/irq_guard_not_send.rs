// An interrupt state is restored on the CPU that saved it: an `IrqGuard` must not move to
// another thread.
use kernel_locks::irq::{Interrupts, IrqGuard};

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

fn main() {
    let masked = IrqGuard::<Never>::new();
    std::thread::spawn(move || drop(masked)).join().unwrap();
}
