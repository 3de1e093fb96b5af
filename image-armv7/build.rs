//! Builds the user ELF (`servers`' `user` binary) for armv7a-none-eabi and hands its path to
//! the image (`USER_ELF`), which embeds it with `include_bytes!`; and links the image with
//! hal-armv7's linker script.
//!
//! The user program needs its own link (user addresses, its own linker script), so it cannot
//! be a normal dependency; Cargo's artifact dependencies would do it but are unstable. So this
//! script runs a nested `cargo build` in a target directory of its own inside `OUT_DIR` (no lock
//! conflict with the outer build), release mode without debug info (a small ELF to embed). The
//! outer build's flags (`RUSTFLAGS`, clippy's wrapper, the target dir) are removed from its
//! environment; the workspace's `.cargo/config.toml` still applies. Host builds (clippy, tests)
//! embed an empty file: the image is only a kernel for armv7a-none-eabi.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest
        .parent()
        .expect("image-armv7 lives in the workspace")
        .to_owned();
    for dep in [
        "servers/src",
        "servers/user.ld",
        "servers/build.rs",
        "servers/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dep).display());
    }
    for dep in ["kernel/src", "sync/src", "hal-armv7/link.ld"] {
        println!("cargo:rerun-if-changed={}", root.join(dep).display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let elf = out.join("user.elf");
    if target == "armv7a-none-eabi" {
        println!(
            "cargo:rustc-link-arg-bins=-T{}",
            root.join("hal-armv7").join("link.ld").display()
        );
        build_user(&root, &out, &elf);
    } else {
        std::fs::write(&elf, b"").expect("write the empty user ELF placeholder");
    }
    println!("cargo:rustc-env=USER_ELF={}", elf.display());
}

fn build_user(root: &Path, out: &Path, elf: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = out.join("user-target");
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "-p",
            "servers",
            "--bin",
            "user",
            "--release",
            "--target",
            "armv7a-none-eabi",
            "--target-dir",
        ])
        .arg(&target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
        .status()
        .expect("run cargo to build the user programs");
    assert!(
        status.success(),
        "building the user programs (servers, bin `user`) failed"
    );
    let built = target_dir
        .join("armv7a-none-eabi")
        .join("release")
        .join("user");
    std::fs::copy(&built, elf).expect("copy the user ELF");
}
