// The token of `lock_irqsave` holds the interrupt state of the CPU that saved it: it must not
// move to another thread, where `unlock_irqrestore` would restore it on the wrong CPU.
use kernel_locks::{KernelLockIrq, TicketLock};

#[path = "common/never.rs"]
mod never;
use never::Never;

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
