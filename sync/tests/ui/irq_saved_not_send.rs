// The token of `lock_irqsave` holds the interrupt state of the CPU that saved it: it must not
// move to another thread, where `unlock_irqrestore` would restore it on the wrong CPU.
use kernel_locks::irq::Interrupts;
use kernel_locks::{KernelLockIrq, TicketLock};

/// A mask that masks nothing, enough to build the token.
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

static LOCK: TicketLock = TicketLock::new();

fn main() {
    let saved = LOCK.lock_irqsave::<Never>(0);
    std::thread::spawn(move || {
        // SAFETY: not reached: this program does not compile.
        unsafe { LOCK.unlock_irqrestore(0, saved) }
    })
    .join()
    .unwrap();
}
