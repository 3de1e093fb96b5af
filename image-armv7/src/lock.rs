//! The lock named on the kernel command line.

/// The kernel's locking strategy, as chosen at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockChoice {
    /// Big kernel lock: CLH queue lock (the default, as seL4).
    Clh,
    /// Big kernel lock: ticket lock.
    Ticket,
    /// Fine-grained: big-reader lock (read side for IPC, write side for management) plus
    /// per-object ticket locks. `brlock` names the same strategy.
    Fine,
    /// Intel RTM elision of a CLH big lock (falls back to the lock where RTM is absent, as
    /// under QEMU TCG).
    Rtm,
    /// No lock at all: only sound because every core's threads use only their own objects and
    /// the root task finishes its management calls before the other cores enter the kernel.
    None,
}

impl LockChoice {
    /// Every accepted command-line value, for messages.
    pub const NAMES: &'static str = "clh, ticket, brlock, fine, rtm, none";

    /// Parses a command-line value.
    pub fn parse(s: &str) -> Option<LockChoice> {
        Some(match s {
            "clh" => LockChoice::Clh,
            "ticket" => LockChoice::Ticket,
            "fine" | "brlock" => LockChoice::Fine,
            "rtm" => LockChoice::Rtm,
            "none" => LockChoice::None,
            _ => return None,
        })
    }

    /// The name printed in the boot log (`lock: NAME`).
    pub fn name(self) -> &'static str {
        match self {
            LockChoice::Clh => "clh",
            LockChoice::Ticket => "ticket",
            LockChoice::Fine => "fine",
            LockChoice::Rtm => "rtm",
            LockChoice::None => "none",
        }
    }

    /// What the strategy is.
    pub fn describe(self) -> &'static str {
        match self {
            LockChoice::Clh => "big kernel lock, CLH queue lock",
            LockChoice::Ticket => "big kernel lock, ticket lock",
            LockChoice::Fine => "fine-grained: big-reader lock + per-object ticket locks",
            LockChoice::Rtm => "RTM lock elision over a CLH big lock",
            LockChoice::None => "no lock (disjoint per-core objects only)",
        }
    }
}
