//! The build script shared by `image-x86` and `image-armv7` (each `build.rs` includes this file
//! with `#[path]`: a build script cannot depend on a crate of its own workspace being built for
//! another target).
//!
//! It builds the user ELF (`servers`' `user` binary) for the image's target and hands its path to
//! the image (`USER_ELF`), which embeds it with `include_bytes!`, and links the image with its
//! HAL's linker script.
//!
//! The user program needs its own link (user addresses, its own linker script), so it cannot
//! be a normal dependency; Cargo's artifact dependencies would do it but are unstable. So this
//! script runs a nested `cargo build` in a target directory of its own inside `OUT_DIR` (no lock
//! conflict with the outer build), release mode without debug info (a small ELF to embed). The
//! outer build's flags (`RUSTFLAGS`, clippy's wrapper, the target dir) are removed from its
//! environment; the workspace's `.cargo/config.toml` still applies. Host builds (clippy, tests)
//! embed an empty file: an image is only a kernel for its bare-metal target.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the build script of the image crate `image`, a kernel for `target` linked with the
/// linker script of the HAL crate `hal`.
pub fn build_image(image: &str, hal: &str, target: &str) {
    let building_for = std::env::var("TARGET").unwrap_or_default();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    // The image crates live in `images/<arch>`: the workspace root is two levels up.
    let root = manifest
        .ancestors()
        .nth(2)
        .unwrap_or_else(|| panic!("{image} lives in the workspace's images/ folder"))
        .to_owned();
    println!(
        "cargo:rerun-if-changed={}",
        root.join("servers/user.ld").display()
    );
    // The user ELF is rebuilt when `servers` or any crate it depends on by path changes
    // (`kv-resp`, `frame-ring`, `pager`, ...), found by following the `path = "..."`
    // dependencies of their manifests.
    for dir in path_dependencies(&root.join("servers")) {
        for part in ["src", "build.rs", "Cargo.toml"] {
            let file = dir.join(part);
            if file.exists() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
    }
    for dep in [
        "kernel/src".to_owned(),
        "sync/src".to_owned(),
        format!("{hal}/link.ld"),
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dep).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!(
        "cargo:rerun-if-changed={}",
        root.join("images/common/build_image.rs").display()
    );

    let elf = out.join("user.elf");
    if building_for == target {
        println!(
            "cargo:rustc-link-arg-bins=-T{}",
            root.join(hal).join("link.ld").display()
        );
        build_user(&root, &out, &elf, target);
    } else {
        std::fs::write(&elf, b"").expect("write the empty user ELF placeholder");
    }
    println!("cargo:rustc-env=USER_ELF={}", elf.display());
}

/// `krate` and every crate it depends on through `path = "..."` entries of its manifest, and
/// theirs in turn (each directory once).
fn path_dependencies(krate: &Path) -> Vec<PathBuf> {
    let mut found = vec![krate.to_owned()];
    let mut next = 0;
    while let Some(dir) = found.get(next).cloned() {
        next += 1;
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("read {}/Cargo.toml: {e}", dir.display()));
        for rest in manifest.split("path = \"").skip(1) {
            let Some((rel, _)) = rest.split_once('"') else {
                continue;
            };
            let dep = dir.join(rel);
            // `[[bin]] path = "src/bin/..."` names a file, not a crate.
            if !dep.join("Cargo.toml").is_file() {
                continue;
            }
            let dep = dep.canonicalize().unwrap_or(dep);
            if !found.contains(&dep) {
                found.push(dep);
            }
        }
    }
    found
}

fn build_user(root: &Path, out: &Path, elf: &Path, target: &str) {
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
            target,
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
    let built = target_dir.join(target).join("release").join("user");
    std::fs::copy(&built, elf).expect("copy the user ELF");
}
