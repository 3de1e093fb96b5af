// An interrupt state is restored on the CPU that saved it: an `IrqGuard` must not move to
// another thread.
use kernel_locks::irq::IrqGuard;

#[path = "common/never.rs"]
mod never;
use never::Never;

fn main() {
    let masked = IrqGuard::<Never>::new();
    std::thread::spawn(move || drop(masked)).join().unwrap();
}
