//! Passes the linker script to the bare-metal binaries of this package; see
//! `hal-common/build_link.rs`.

#[path = "../hal-common/build_link.rs"]
mod build_link;

fn main() {
    build_link::link_bins_for("x86_64-unknown-none");
}
