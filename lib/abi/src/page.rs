//! How a user page is mapped (the `MapPage` attribute word).

bitflags::bitflags! {
    /// How a user page is mapped. Always readable; writable and executable never together.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    pub struct PageAttrs: u8 {
        /// Writable.
        const WRITE = 1;
        /// Executable (else never executable: x86 NX, ARM XN).
        const EXEC = 2;
        /// Device memory: uncached, strongly ordered (x86 PCD|PWT, ARM Device); else normal
        /// write-back memory.
        const DEVICE = 4;
    }
}

impl PageAttrs {
    /// Whether the attributes are a combination the kernel maps: not writable and executable
    /// at once, not executable device memory.
    pub const fn valid(self) -> bool {
        !self.contains(PageAttrs::WRITE.union(PageAttrs::EXEC))
            && !self.contains(PageAttrs::DEVICE.union(PageAttrs::EXEC))
    }
}
