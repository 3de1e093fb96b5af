//! Decoding what an exception left behind: processor modes, exception kinds, and the
//! short-descriptor fault status registers (DFSR/IFSR).
//!
//! Pure functions, so they build and are unit-tested on the host; the exception handlers in
//! `exception.rs` use them to print the fault report.

use core::fmt;

/// A processor mode, CPSR/SPSR bits \[4:0\].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// User (PL0).
    User,
    /// FIQ.
    Fiq,
    /// IRQ.
    Irq,
    /// Supervisor: the kernel runs here.
    Svc,
    /// Monitor (Secure only).
    Monitor,
    /// Abort: data and prefetch aborts are taken here.
    Abort,
    /// Hypervisor (PL2, Non-secure only).
    Hyp,
    /// Undefined instruction.
    Undefined,
    /// System (PL1 with the User registers).
    System,
    /// Any other value (reserved encodings).
    Invalid(u32),
}

impl Mode {
    /// The mode encoded in a CPSR/SPSR value.
    pub const fn from_psr(psr: u32) -> Mode {
        match psr & 0x1F {
            0x10 => Mode::User,
            0x11 => Mode::Fiq,
            0x12 => Mode::Irq,
            0x13 => Mode::Svc,
            0x16 => Mode::Monitor,
            0x17 => Mode::Abort,
            0x1A => Mode::Hyp,
            0x1B => Mode::Undefined,
            0x1F => Mode::System,
            other => Mode::Invalid(other),
        }
    }

    /// Short lower-case name ("svc", "usr", ...).
    pub const fn name(self) -> &'static str {
        match self {
            Mode::User => "usr",
            Mode::Fiq => "fiq",
            Mode::Irq => "irq",
            Mode::Svc => "svc",
            Mode::Monitor => "mon",
            Mode::Abort => "abt",
            Mode::Hyp => "hyp",
            Mode::Undefined => "und",
            Mode::System => "sys",
            Mode::Invalid(_) => "invalid",
        }
    }

    /// Whether this is a privileged (kernel) mode.
    pub const fn is_privileged(self) -> bool {
        !matches!(self, Mode::User)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The exception vectors, numbered by their offset in the vector table divided by 4 (the
/// number the assembly stubs pass to the handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExceptionKind {
    /// Offset 0x00: reset (never taken through VBAR; reported if it is).
    Reset,
    /// Offset 0x04: undefined instruction.
    Undefined,
    /// Offset 0x08: supervisor call.
    Svc,
    /// Offset 0x0C: prefetch abort (instruction fetch fault).
    PrefetchAbort,
    /// Offset 0x10: data abort.
    DataAbort,
    /// Offset 0x14: not used outside Hyp mode.
    Unused,
    /// Offset 0x18: IRQ.
    Irq,
    /// Offset 0x1C: FIQ.
    Fiq,
}

impl ExceptionKind {
    /// The kind for vector number `n` (offset / 4).
    pub const fn from_vector(n: u32) -> ExceptionKind {
        match n {
            0 => ExceptionKind::Reset,
            1 => ExceptionKind::Undefined,
            2 => ExceptionKind::Svc,
            3 => ExceptionKind::PrefetchAbort,
            4 => ExceptionKind::DataAbort,
            6 => ExceptionKind::Irq,
            7 => ExceptionKind::Fiq,
            _ => ExceptionKind::Unused,
        }
    }

    /// Offset of the vector in the vector table.
    pub const fn vector_offset(self) -> u32 {
        match self {
            ExceptionKind::Reset => 0x00,
            ExceptionKind::Undefined => 0x04,
            ExceptionKind::Svc => 0x08,
            ExceptionKind::PrefetchAbort => 0x0C,
            ExceptionKind::DataAbort => 0x10,
            ExceptionKind::Unused => 0x14,
            ExceptionKind::Irq => 0x18,
            ExceptionKind::Fiq => 0x1C,
        }
    }

    /// Human-readable name.
    pub const fn name(self) -> &'static str {
        match self {
            ExceptionKind::Reset => "reset",
            ExceptionKind::Undefined => "undefined instruction",
            ExceptionKind::Svc => "supervisor call",
            ExceptionKind::PrefetchAbort => "prefetch abort",
            ExceptionKind::DataAbort => "data abort",
            ExceptionKind::Unused => "unused vector",
            ExceptionKind::Irq => "irq",
            ExceptionKind::Fiq => "fiq",
        }
    }
}

/// A decoded short-descriptor DFSR or IFSR value (ARM ARM B4.1.52, B4.1.96).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultStatus {
    /// The raw register value.
    pub raw: u32,
}

impl FaultStatus {
    /// Wraps a raw DFSR/IFSR value.
    pub const fn new(raw: u32) -> Self {
        Self { raw }
    }

    /// FS\[4:0\]: bit 10 and bits \[3:0\].
    pub const fn fs(self) -> u32 {
        ((self.raw >> 6) & 0x10) | (self.raw & 0xF)
    }

    /// WnR (DFSR only): the access was a write.
    pub const fn is_write(self) -> bool {
        self.raw & (1 << 11) != 0
    }

    /// ExT: the external abort type bit (implementation defined meaning).
    pub const fn external(self) -> bool {
        self.raw & (1 << 12) != 0
    }

    /// Bit 9 set: the register uses the long-descriptor (LPAE) format, which this decoder
    /// does not interpret.
    pub const fn is_long_format(self) -> bool {
        self.raw & (1 << 9) != 0
    }

    /// Domain (DFSR, short format, for domain and some translation faults).
    pub const fn domain(self) -> u32 {
        (self.raw >> 4) & 0xF
    }

    /// What FS says happened.
    pub const fn description(self) -> &'static str {
        if self.is_long_format() {
            return "long-descriptor format status (not decoded)";
        }
        match self.fs() {
            0b00001 => "alignment fault",
            0b00100 => "fault on instruction cache maintenance",
            0b01100 => "synchronous external abort on translation table walk, first level",
            0b01110 => "synchronous external abort on translation table walk, second level",
            0b11100 => "synchronous parity error on translation table walk, first level",
            0b11110 => "synchronous parity error on translation table walk, second level",
            0b00101 => "translation fault, section",
            0b00111 => "translation fault, page",
            0b00011 => "access flag fault, section",
            0b00110 => "access flag fault, page",
            0b01001 => "domain fault, section",
            0b01011 => "domain fault, page",
            0b01101 => "permission fault, section",
            0b01111 => "permission fault, page",
            0b00010 => "debug event",
            0b01000 => "synchronous external abort",
            0b10100 => "lockdown (implementation defined)",
            0b11010 => "coprocessor abort (implementation defined)",
            0b11001 => "synchronous parity error on memory access",
            0b10110 => "asynchronous external abort",
            0b11000 => "asynchronous parity error on memory access",
            _ => "reserved fault status",
        }
    }
}

impl fmt::Display for FaultStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}: {}", self.raw, self.description())
    }
}

/// The offset to subtract from the banked LR of an exception to get the address of the
/// instruction that caused it (ARM state; ARM ARM B1.8.3 table B1-7).
pub const fn lr_offset(kind: ExceptionKind) -> u32 {
    match kind {
        ExceptionKind::DataAbort => 8,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(Mode::from_psr(0x6000_01D3), Mode::Svc);
        assert_eq!(Mode::from_psr(0x10), Mode::User);
        assert_eq!(Mode::from_psr(0x1A), Mode::Hyp);
        assert_eq!(Mode::from_psr(0x15), Mode::Invalid(0x15));
        assert!(!Mode::User.is_privileged());
        assert_eq!(Mode::Abort.name(), "abt");
    }

    #[test]
    fn fault_status() {
        // Read of an unmapped section.
        let s = FaultStatus::new(0x005);
        assert_eq!(s.description(), "translation fault, section");
        assert!(!s.is_write());
        // Write, permission fault on a page, domain 0.
        let s = FaultStatus::new(0x80F);
        assert!(s.is_write());
        assert_eq!(s.description(), "permission fault, page");
        // FS[4] lives in bit 10: asynchronous external abort.
        assert_eq!(FaultStatus::new(0x406).fs(), 0b10110);
        assert_eq!(
            FaultStatus::new(0x406).description(),
            "asynchronous external abort"
        );
        assert!(FaultStatus::new(0x200).is_long_format());
    }

    #[test]
    fn kinds() {
        assert_eq!(ExceptionKind::from_vector(4), ExceptionKind::DataAbort);
        assert_eq!(lr_offset(ExceptionKind::DataAbort), 8);
        assert_eq!(lr_offset(ExceptionKind::PrefetchAbort), 4);
        assert_eq!(ExceptionKind::from_vector(5).name(), "unused vector");
    }
}
