//! Links the user program (`src/bin/user.rs`) at user addresses with `user.ld` when it is built
//! for x86_64-unknown-none; host and other targets get no linker script.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if target == "x86_64-unknown-none" || target == "armv7a-none-eabi" {
        println!("cargo:rustc-link-arg-bins=-T{dir}/user.ld");
    }
    println!("cargo:rerun-if-changed=user.ld");
    println!("cargo:rerun-if-changed=build.rs");
}
