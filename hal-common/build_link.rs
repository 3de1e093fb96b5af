//! The HALs' build scripts' shared part (each includes this file with `#[path]`): passes the
//! package's linker script `link.ld` to its bare-metal binaries.
//!
//! Only binaries get it (`rustc-link-arg-bins`): the library is linked by its users, and a
//! host build (`cargo test -p hal-x86 --lib`, `cargo clippy -p hal-armv7`) must not see a kernel
//! linker script at all.

/// Links the package's binaries with its `link.ld` when building for `bare_metal_target`.
pub fn link_bins_for(bare_metal_target: &str) {
    let target = std::env::var("TARGET").unwrap_or_default();
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if target == bare_metal_target {
        println!("cargo:rustc-link-arg-bins=-T{dir}/link.ld");
    }
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../hal-common/build_link.rs");
}
