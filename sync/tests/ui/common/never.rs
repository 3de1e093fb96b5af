//! The interrupt mask of the compile-fail programs that build interrupt guards: it masks
//! nothing (the programs never run), and needs no feature of the crate.

use kernel_locks::irq::Interrupts;

/// A mask that masks nothing, enough to build the guards.
pub struct Never;

// SAFETY: no interrupts exist in these programs.
unsafe impl Interrupts for Never {
    type State = ();
    fn save_and_disable() {}
    unsafe fn restore(_: ()) {}
    fn are_enabled() -> bool {
        false
    }
}
