//! Passes the linker script to the bare-metal binaries of this package.
//!
//! Only binaries get it (`rustc-link-arg-bins`): the library is linked by its users, and a
//! host build (`cargo clippy -p hal-armv7`) must not see a kernel linker script at all.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if target == "armv7a-none-eabi" {
        println!("cargo:rustc-link-arg-bins=-T{dir}/link.ld");
    }
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-changed=build.rs");
}
