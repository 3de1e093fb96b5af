//! Access rights of a capability (system-call argument and `Mint` operand).

bitflags::bitflags! {
    /// Access rights of a capability.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    pub struct Rights: u8 {
        /// Receive (Recv, Wait); map memory readable; read a region's physical address.
        const READ = 1;
        /// Send (Send, Call, NBSend, Signal); map memory writable; change an address space.
        const WRITE = 2;
        /// Copy the capability (Mint) with equal or fewer rights.
        const GRANT = 4;
        /// Manage the object: thread control, IRQ binding, object creation, splitting, merging
        /// and revoking memory.
        const MANAGE = 8;
        /// Map memory executable (never together with WRITE in one mapping).
        const EXEC = 16;
    }
}

impl Rights {
    /// No rights.
    pub const NONE: Rights = Rights::empty();
    /// Every right.
    pub const ALL: Rights = Rights::all();

    /// The rights with these bits, if every bit is a known right.
    pub const fn from_bits_checked(bits: usize) -> Option<Rights> {
        if bits <= u8::MAX as usize {
            Rights::from_bits(bits as u8)
        } else {
            None
        }
    }

    /// The bits, as a register value.
    pub const fn word(self) -> usize {
        self.bits() as usize
    }
}
