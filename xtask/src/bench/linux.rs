//! The Linux + Redis baseline of `cargo xtask bench --suite redis`: Debian's Linux kernel and
//! the real `redis-server`, one instance per core, on the same QEMU machine (x86_64 `-M
//! microvm`, the same board file: CPU model, memory, devices) and the same user network as the
//! kernel's server.
//!
//! The boot files are built at bench time from Debian packages and never committed:
//! `apt-get download` fetches `linux-image-amd64` (for the name of the versioned kernel package
//! it depends on), that kernel package and `busybox-static` into `<target>/linux-baseline/`
//! (kept there: later runs reuse them), `dpkg-deb -x` unpacks them, and an initramfs (a `newc`
//! cpio archive, written here) gets busybox, the virtio modules the Debian kernel builds as
//! modules (`virtio_ring`, `virtio`, `virtio_mmio`, `failover`, `net_failover`, `virtio_net`),
//! and the host's `/usr/bin/redis-server` (Debian's redis-server package, the same x86_64
//! userland) with the shared libraries `ldd` names. Its `/init` ([`INIT`]) loads the modules,
//! configures `eth0` as QEMU's user network expects (10.0.2.15/24, gateway 10.0.2.2), starts
//! `redis-server` on ports 6379, 6380, ... (one per core, no persistence), serves `/proc/stat`
//! over HTTP on port [`STAT_PORT`] (busybox `httpd`, a CGI script) for the utilisation, and
//! prints the same `net: listening on` line as the kernel's server.
//!
//! ARMv7 is not built: it would need the armhf kernel and an armhf `redis-server` with its
//! libraries (`dpkg --add-architecture armhf`, a change to the host's package configuration).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::proc::Cmd;

/// The guest port of the `/proc/stat` server.
pub const STAT_PORT: u16 = 9100;
/// The first Redis port; instance `i` listens on `REDIS_PORT + i`.
pub const REDIS_PORT: u16 = 6379;
/// The kernel command line.
pub const APPEND: &str = "console=ttyS0 quiet panic=-1";

/// Modules to load, in dependency order (each module's `depends=` names only earlier ones).
const MODULES: [&str; 6] = [
    "virtio_ring",
    "virtio",
    "virtio_mmio",
    "failover",
    "net_failover",
    "virtio_net",
];

/// The initramfs's `/init`.
pub const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_mmio failover net_failover virtio_net; do
  insmod /lib/modules/$m.ko || echo "net: FAILED: insmod $m"
done
ip link set lo up
ip link set eth0 up || echo "net: FAILED: no eth0"
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
mkdir -p /www/cgi-bin
printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\n"\ncat /proc/stat\n' > /www/cgi-bin/stat
chmod +x /www/cgi-bin/stat
httpd -p 9100 -h /www
n=$(nproc)
i=0
while [ $i -lt $n ]; do
  redis-server --port $((6379 + i)) --bind 0.0.0.0 --protected-mode no --save "" \
    --appendonly no --daemonize yes --logfile /tmp/redis$i.log \
    || echo "net: FAILED: redis-server $i"
  i=$((i + 1))
done
sleep 0.5
echo "net: listening on 10.0.2.15:6379 (Linux $(uname -r), $n redis-server instances)"
while true; do sleep 3600; done
"#;

/// The boot files of the baseline.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The kernel (`vmlinuz-*` from the Debian package).
    pub kernel: PathBuf,
    /// The initramfs (an uncompressed `newc` cpio archive).
    pub initrd: PathBuf,
    /// The kernel release (`6.1.0-56-amd64`).
    pub release: String,
    /// `redis-server --version`.
    pub redis: String,
}

/// Builds (or reuses) the x86_64 baseline's boot files under `<target>/linux-baseline/x86_64`.
pub fn prepare(root: &Path) -> Result<Baseline, String> {
    let dir = crate::target_dir(root)
        .join("linux-baseline")
        .join("x86_64");
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for tool in ["apt-get", "dpkg-deb", "ldd"] {
        if Cmd::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .read_stdout(root)
            .is_none()
        {
            return Err(format!(
                "`{tool}` is missing: the Linux baseline is built from Debian packages"
            ));
        }
    }
    let redis_bin = PathBuf::from("/usr/bin/redis-server");
    let redis = Cmd::new(&redis_bin)
        .arg("--version")
        .read_stdout(root)
        .ok_or(
            "redis-server is missing: apt-get install redis-server (the Linux baseline runs it)",
        )?;

    let meta = download(&dir, "linux-image-amd64")?;
    let depends = Cmd::new("dpkg-deb")
        .arg("-f")
        .arg(&meta)
        .arg("Depends")
        .read_stdout(root)
        .unwrap_or_default();
    let kernel_pkg = depends
        .split([',', '|'])
        .map(|d| d.split_whitespace().next().unwrap_or(""))
        .find(|d| d.starts_with("linux-image-") && d != &"linux-image-amd64")
        .ok_or_else(|| format!("linux-image-amd64 names no kernel package: {depends:?}"))?
        .to_owned();
    let kernel_deb = download(&dir, &kernel_pkg)?;
    let busybox_deb = download(&dir, "busybox-static")?;
    let kernel_tree = unpack(root, &dir, &kernel_deb, &kernel_pkg)?;
    let busybox_tree = unpack(root, &dir, &busybox_deb, "busybox-static")?;

    let release = kernel_pkg
        .strip_prefix("linux-image-")
        .unwrap_or(&kernel_pkg)
        .to_owned();
    let kernel = kernel_tree.join("boot").join(format!("vmlinuz-{release}"));
    if !kernel.exists() {
        return Err(format!("{} is not in {kernel_pkg}", kernel.display()));
    }

    // The initramfs: its files as (path in the archive, contents, executable).
    let mut files: Vec<(String, Vec<u8>, bool)> = Vec::new();
    let read = |p: &Path| fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    files.push((
        "bin/busybox".into(),
        read(&busybox_tree.join("bin/busybox"))?,
        true,
    ));
    let modules = kernel_tree.join("lib/modules").join(&release);
    for m in MODULES {
        let path = find_file(&modules, &format!("{m}.ko"))
            .ok_or_else(|| format!("{m}.ko is not in {kernel_pkg}"))?;
        files.push((format!("lib/modules/{m}.ko"), read(&path)?, false));
    }
    files.push(("bin/redis-server".into(), read(&redis_bin)?, true));
    let ldd = Cmd::new("ldd")
        .arg(&redis_bin)
        .read_stdout(root)
        .ok_or("ldd /usr/bin/redis-server failed")?;
    for lib in shared_libraries(&ldd) {
        let data = read(Path::new(&lib))?;
        files.push((lib.trim_start_matches('/').to_owned(), data, true));
    }
    files.push(("init".into(), INIT.as_bytes().to_vec(), true));
    let initrd = dir.join("initrd.cpio");
    let archive = cpio(&files, &["proc", "sys", "dev", "tmp", "www"]);
    fs::File::create(&initrd)
        .and_then(|mut f| f.write_all(&archive))
        .map_err(|e| format!("cannot write {}: {e}", initrd.display()))?;
    Ok(Baseline {
        kernel,
        initrd,
        release,
        redis: redis.lines().next().unwrap_or("").to_owned(),
    })
}

/// `apt-get download pkg` into `dir`, unless a `pkg_*.deb` is there already; its path.
fn download(dir: &Path, pkg: &str) -> Result<PathBuf, String> {
    let find = || -> Option<PathBuf> {
        fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{pkg}_")) && n.ends_with(".deb"))
            })
    };
    if let Some(deb) = find() {
        return Ok(deb);
    }
    println!("bench: linux baseline: apt-get download {pkg}");
    let fetch = || {
        Cmd::new("apt-get")
            .args(["download", pkg])
            .run_captured(dir, false, std::time::Duration::from_secs(600))
            .map_err(|e| format!("cannot run apt-get: {e}"))
    };
    let mut out = fetch()?;
    if find().is_none() && crate::deps::is_root() {
        // A fresh machine (a container image) may have no package lists yet.
        println!("bench: linux baseline: apt-get update, then again");
        let _ = Cmd::new("apt-get").args(["update", "-qq"]).run_captured(
            dir,
            false,
            std::time::Duration::from_secs(600),
        );
        out = fetch()?;
    }
    match find() {
        Some(deb) if out.status.success() => Ok(deb),
        _ => Err(format!(
            "apt-get download {pkg} failed ({}): {}",
            out.status,
            out.lines.last().map(String::as_str).unwrap_or("")
        )),
    }
}

/// `dpkg-deb -x deb dir/x-name` unless done; the tree.
fn unpack(root: &Path, dir: &Path, deb: &Path, name: &str) -> Result<PathBuf, String> {
    let tree = dir.join(format!("x-{name}"));
    let done = tree.join(".unpacked");
    if done.exists() {
        return Ok(tree);
    }
    let _ = fs::remove_dir_all(&tree);
    let ok = Cmd::new("dpkg-deb")
        .arg("-x")
        .arg(deb)
        .arg(&tree)
        .run_inherited(root)
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return Err(format!("dpkg-deb -x {} failed", deb.display()));
    }
    fs::write(&done, b"").map_err(|e| format!("cannot write {}: {e}", done.display()))?;
    Ok(tree)
}

/// The first file named `name` under `dir`.
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().and_then(|n| n.to_str()) == Some(name) {
            return Some(path);
        }
    }
    None
}

/// The absolute library paths in `ldd` output (`libc.so.6 => /lib/.../libc.so.6 (0x...)` and
/// the loader's `/lib64/ld-linux-x86-64.so.2 (0x...)`).
pub fn shared_libraries(ldd: &str) -> Vec<String> {
    let mut libs: Vec<String> = Vec::new();
    for line in ldd.lines() {
        let path = match line.split_once("=>") {
            Some((_, right)) => right.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            if !libs.iter().any(|l| l == p) {
                libs.push(p.to_owned());
            }
        }
    }
    libs
}

/// A `newc` cpio archive (what the kernel unpacks as an initramfs) of `files` (path,
/// contents, executable) and the empty directories `dirs`; every parent directory is made.
pub fn cpio(files: &[(String, Vec<u8>, bool)], dirs: &[&str]) -> Vec<u8> {
    let mut all_dirs: Vec<String> = dirs.iter().map(|d| d.to_string()).collect();
    // Every proper prefix of every file's path is a directory.
    for (path, _, _) in files {
        let parts: Vec<&str> = path.split('/').collect();
        for i in 1..parts.len() {
            let p = parts[..i].join("/");
            if !all_dirs.contains(&p) {
                all_dirs.push(p);
            }
        }
    }
    all_dirs.sort_by_key(|d| d.matches('/').count());
    let mut out = Vec::new();
    let mut ino = 1u32;
    let mut entry = |out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8]| {
        let header = format!(
            "070701{ino:08X}{mode:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime
            data.len(),
            0, // devmajor
            0, // devminor
            0, // rdevmajor
            0, // rdevminor
            name.len() + 1,
            0, // check
        );
        ino += 1;
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out.extend_from_slice(data);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    };
    for d in &all_dirs {
        entry(&mut out, d, 0o040755, &[]);
    }
    for (path, data, exec) in files {
        entry(
            &mut out,
            path,
            if *exec { 0o100755 } else { 0o100644 },
            data,
        );
    }
    entry(&mut out, "TRAILER!!!", 0, &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_absolute_paths_once() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f35)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f36)\n\
                   \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x1)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f35)\n";
        assert_eq!(
            shared_libraries(ldd),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2",
                "/lib/x86_64-linux-gnu/libm.so.6"
            ]
        );
    }

    #[test]
    fn cpio_is_newc_with_parents_first_and_a_trailer() {
        let files = vec![
            ("bin/busybox".to_string(), b"elf".to_vec(), true),
            (
                "lib/modules/virtio.ko".to_string(),
                b"ko!!x".to_vec(),
                false,
            ),
        ];
        let a = cpio(&files, &["proc"]);
        assert_eq!(a.len() % 4, 0);
        let text = String::from_utf8_lossy(&a);
        let at = |name: &str| {
            text.find(&format!("{name}\0"))
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        assert!(at("lib") < at("lib/modules"));
        assert!(at("lib/modules") < at("lib/modules/virtio.ko"));
        assert!(at("bin") < at("bin/busybox"));
        assert!(text.contains("TRAILER!!!\0"));
        // Every header starts with the newc magic; the first is a directory (mode 040755).
        assert!(a.starts_with(b"070701"));
        assert_eq!(&a[14..22], b"000041ED");
        // proc, bin, lib, lib/modules; two files; the trailer.
        assert_eq!(text.matches("070701").count(), 4 + 2 + 1);
    }
}
