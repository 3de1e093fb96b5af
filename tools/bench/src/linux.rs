//! The Linux + Redis baseline of `cargo xtask bench redis`: Debian's Linux kernel and
//! the real `redis-server`, one instance per core, on the same QEMU machine as the kernel's
//! server (x86_64 `-M microvm`, ARMv7 `-M virt`; the same board file: CPU model, memory,
//! devices) and the same user network.
//!
//! The boot files are built at bench time from Debian packages and never committed; they go
//! to `<target>/linux-baseline/<arch>/` and later runs reuse them. `apt-get download` fetches
//! the kernel's meta package (`linux-image-amd64`, `linux-image-armmp`) for the name of the
//! versioned kernel package it depends on, that package and `busybox-static`; `dpkg-deb -x`
//! unpacks them, and an initramfs (a `newc` cpio archive, written here) gets busybox, the
//! virtio modules the Debian kernel builds as modules (of `virtio_ring`, `virtio`,
//! `virtio_mmio`, `failover`, `net_failover`, `virtio_net`; the others are built in), and
//! `redis-server` with its shared libraries:
//! - x86_64: the host's `/usr/bin/redis-server` (Debian's redis-server package, the same
//!   userland) and the libraries `ldd` names;
//! - ARMv7: the armhf `redis-tools` package's binary and every shared library of the `lib*`
//!   packages its dependencies name, recursively (the host cannot run `ldd` on an armhf
//!   binary). The armhf packages come from a private apt state under `apt/` (its own package
//!   lists, the host's sources, `APT::Architectures=armhf`), so the host's package
//!   configuration is never changed (no `dpkg --add-architecture`).
//!
//! Its `/init` ([`init_script`]) loads the modules, configures `eth0` as QEMU's user network
//! expects (10.0.2.15/24, gateway 10.0.2.2), starts `redis-server` on ports 6379, 6380, ...
//! (one per core, no persistence), serves `/proc/stat` over HTTP on port [`STAT_PORT`]
//! (busybox `httpd`, a CGI script) for the utilisation, and prints the same `net: listening
//! on` line as the kernel's server.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use host_env::proc::Cmd;
use qemu_runner::qemu::Arch;

/// The guest port of the `/proc/stat` server.
pub const STAT_PORT: u16 = 9100;
/// The first Redis port; instance `i` listens on `REDIS_PORT + i`.
pub const REDIS_PORT: u16 = 6379;

/// The virtio modules the network needs, in dependency order (each module's `depends=` names
/// only earlier ones). A kernel that builds one in lists it in `modules.builtin` instead.
const MODULES: [&str; 6] = [
    "virtio_ring",
    "virtio",
    "virtio_mmio",
    "failover",
    "net_failover",
    "virtio_net",
];

/// The initramfs's `/init`, loading `modules` (from `/lib/modules/<name>.ko`) in order.
pub fn init_script(modules: &[&str]) -> String {
    format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in {modules}; do
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
"#,
        modules = modules.join(" ")
    )
}

/// The boot files of the baseline.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The architecture they are for.
    pub arch: Arch,
    /// The kernel (`vmlinuz-*` from the Debian package).
    pub kernel: PathBuf,
    /// The initramfs (an uncompressed `newc` cpio archive).
    pub initrd: PathBuf,
    /// The kernel release (`6.1.0-56-amd64`).
    pub release: String,
    /// The Redis server's version (`redis-server --version`, or the armhf package's).
    pub redis: String,
    /// The kernel command line (the board's console; on x86_64 the TSC rate, see
    /// [`x86_append`]).
    pub append: String,
}

/// Where a baseline's packages come from: the host's apt, or a private armhf apt state.
struct Apt {
    /// Where the `.deb` files go.
    dir: PathBuf,
    /// `-o` options for apt-get and apt-cache (none for the host's apt).
    options: Vec<String>,
}

impl Apt {
    /// The host's apt, for packages of the host's own architecture.
    fn host(dir: &Path) -> Apt {
        Apt {
            dir: dir.to_owned(),
            options: Vec::new(),
        }
    }

    /// A private apt state under `dir/apt` for `arch` packages: its own package lists and
    /// cache, the host's sources, nothing installed. The lists are fetched once.
    fn foreign(root: &Path, dir: &Path, arch: &str) -> Result<Apt, String> {
        let state = dir.join("apt");
        let parts = state.join("sources.list.d");
        for d in [
            state.join("lists/partial"),
            state.join("cache/archives/partial"),
            parts.clone(),
        ] {
            fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        // The host's sources: sources.list and the enabled parts.
        let mut sources = 0;
        let etc = Path::new("/etc/apt");
        let mut candidates = vec![etc.join("sources.list")];
        if let Ok(entries) = fs::read_dir(etc.join("sources.list.d")) {
            candidates.extend(entries.flatten().map(|e| e.path()));
        }
        for src in candidates {
            let Some(name) = src.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if (name.ends_with(".list") || name.ends_with(".sources")) && src.is_file() {
                fs::copy(&src, parts.join(name))
                    .map_err(|e| format!("cannot copy {}: {e}", src.display()))?;
                sources += 1;
            }
        }
        if sources == 0 {
            return Err("/etc/apt names no package sources (sources.list, sources.list.d)".into());
        }
        let status = state.join("status");
        if !status.exists() {
            fs::write(&status, b"")
                .map_err(|e| format!("cannot write {}: {e}", status.display()))?;
        }
        let options = [
            format!("APT::Architecture={arch}"),
            format!("APT::Architectures::={arch}"),
            format!("Dir::State::Lists={}", state.join("lists").display()),
            format!("Dir::State::status={}", status.display()),
            format!("Dir::Cache={}", state.join("cache").display()),
            "Dir::Etc::SourceList=/dev/null".to_owned(),
            format!("Dir::Etc::SourceParts={}", parts.display()),
        ]
        .into_iter()
        .flat_map(|o| ["-o".to_owned(), o])
        .collect();
        let apt = Apt {
            dir: dir.to_owned(),
            options,
        };
        let has_lists = fs::read_dir(state.join("lists"))
            .map(|d| {
                d.flatten().any(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.contains(&format!("binary-{arch}_Packages")))
                })
            })
            .unwrap_or(false);
        if !has_lists {
            println!("bench: linux baseline: apt-get update ({arch} package lists, private)");
            // A source that fails (a mirror caught mid-sync) is reported and left out; what
            // matters is that the main lists arrived, which `show` checks below.
            let out = Cmd::new("apt-get")
                .args(&apt.options)
                .args(["update", "-qq"])
                .run_captured(root, false, std::time::Duration::from_secs(600))
                .map_err(|e| format!("cannot run apt-get: {e}"))?;
            if !out.status.success() {
                println!(
                    "bench: linux baseline: apt-get update: {}",
                    out.lines.last().map(String::as_str).unwrap_or("failed")
                );
            }
        }
        if apt.show(root, "libc6").is_none() {
            return Err(format!(
                "no {arch} package lists: apt-get update with APT::Architectures={arch} failed \
                 (is a Debian mirror reachable?)"
            ));
        }
        Ok(apt)
    }

    /// `apt-cache show --no-all-versions pkg`.
    fn show(&self, root: &Path, pkg: &str) -> Option<String> {
        Cmd::new("apt-cache")
            .args(&self.options)
            .args(["show", "--no-all-versions", pkg])
            .read_stdout(root)
            .filter(|s| !s.trim().is_empty())
    }

    /// `pkg` and every `lib*` package its `Depends` and `Pre-Depends` name, recursively (the
    /// first of each set of alternatives): the shared libraries a binary of `pkg` needs.
    fn library_closure(&self, root: &Path, pkg: &str) -> Result<Vec<String>, String> {
        let mut all = vec![pkg.to_owned()];
        let mut i = 0;
        while i < all.len() {
            let meta = self
                .show(root, &all[i])
                .ok_or_else(|| format!("apt-cache show {} found nothing", all[i]))?;
            for dep in depends(&meta) {
                if dep.starts_with("lib") && !all.contains(&dep) {
                    all.push(dep);
                }
            }
            i += 1;
        }
        Ok(all)
    }

    /// `apt-get download pkg` into the directory, unless a `pkg_*.deb` is there already; its
    /// path.
    fn download(&self, pkg: &str) -> Result<PathBuf, String> {
        let dir = &self.dir;
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
                .args(&self.options)
                .args(["download", pkg])
                .run_captured(dir, false, std::time::Duration::from_secs(600))
                .map_err(|e| format!("cannot run apt-get: {e}"))
        };
        let mut out = fetch()?;
        if find().is_none() && self.options.is_empty() && host_env::deps::is_root() {
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
}

/// The package names a package's `Depends` and `Pre-Depends` fields name: the first
/// alternative of each, without version or architecture qualifier.
pub fn depends(meta: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in meta.lines() {
        let Some(list) = line
            .strip_prefix("Depends:")
            .or_else(|| line.strip_prefix("Pre-Depends:"))
        else {
            continue;
        };
        for item in list.split(',') {
            let first = item.split('|').next().unwrap_or("").trim();
            let name = first
                .split(|c: char| c.is_whitespace() || c == '(')
                .next()
                .unwrap_or("");
            let name = name.split(':').next().unwrap_or("");
            if !name.is_empty() && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// A file of the initramfs: its path in the archive, contents, and whether it is executable.
type File = (String, Vec<u8>, bool);

/// Builds (or reuses) `arch`'s baseline boot files under `<target>/linux-baseline/<arch>`.
pub fn prepare(root: &Path, arch: Arch) -> Result<Baseline, String> {
    let name = qemu_runner::qemu::arch_name(arch);
    let dir = host_env::target_dir(root).join("linux-baseline").join(name);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tools: &[&str] = match arch {
        Arch::X86_64 => &["apt-get", "dpkg-deb", "ldd"],
        Arch::Armv7 => &["apt-get", "apt-cache", "dpkg-deb"],
    };
    for tool in tools {
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
    let (apt, flavour, append) = match arch {
        Arch::X86_64 => (Apt::host(&dir), "amd64", x86_append()),
        Arch::Armv7 => (
            Apt::foreign(root, &dir, "armhf")?,
            "armmp",
            "console=ttyAMA0 quiet panic=-1".to_owned(),
        ),
    };

    let meta_pkg = format!("linux-image-{flavour}");
    let meta = apt.download(&meta_pkg)?;
    let depends = Cmd::new("dpkg-deb")
        .arg("-f")
        .arg(&meta)
        .arg("Depends")
        .read_stdout(root)
        .unwrap_or_default();
    let kernel_pkg = depends
        .split([',', '|'])
        .map(|d| d.split_whitespace().next().unwrap_or(""))
        .find(|d| d.starts_with("linux-image-") && d != &meta_pkg)
        .ok_or_else(|| format!("{meta_pkg} names no kernel package: {depends:?}"))?
        .to_owned();
    let kernel_deb = apt.download(&kernel_pkg)?;
    let busybox_deb = apt.download("busybox-static")?;
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

    let mut files: Vec<File> = vec![(
        "bin/busybox".into(),
        read(&busybox_tree.join("bin/busybox"))?,
        true,
    )];
    let modules = kernel_tree.join("lib/modules").join(&release);
    let builtin = fs::read_to_string(modules.join("modules.builtin")).unwrap_or_default();
    let mut loaded: Vec<&str> = Vec::new();
    for m in MODULES {
        match find_file(&modules, &format!("{m}.ko")) {
            Some(path) => {
                files.push((format!("lib/modules/{m}.ko"), read(&path)?, false));
                loaded.push(m);
            }
            None if builtin.lines().any(|l| l.ends_with(&format!("/{m}.ko"))) => {}
            None => {
                return Err(format!(
                    "{m} is neither a module nor built into {kernel_pkg}"
                ))
            }
        }
    }
    let redis = match arch {
        Arch::X86_64 => host_redis(root, &mut files)?,
        Arch::Armv7 => packaged_redis(root, &apt, &dir, &mut files)?,
    };
    files.push(("init".into(), init_script(&loaded).into_bytes(), true));
    let initrd = dir.join("initrd.cpio");
    let archive = cpio(&files, &["proc", "sys", "dev", "tmp", "www"]);
    fs::File::create(&initrd)
        .and_then(|mut f| f.write_all(&archive))
        .map_err(|e| format!("cannot write {}: {e}", initrd.display()))?;
    Ok(Baseline {
        arch,
        kernel,
        initrd,
        release,
        redis,
        append,
    })
}

/// The x86_64 kernel command line. Under TCG the guest's TSC is the host's, so the host's
/// TSC rate is given (`tsc_early_khz`) and the IO-APIC timer check is skipped
/// (`no_timer_check`): on a loaded host Linux's calibration against the PIT can fail ("Unable
/// to calibrate against PIT") and the boot then stopped in the timer check for minutes
/// (measured with both host cores busy: 1 of 2 boots without these options, none of 5 with
/// them).
fn x86_append() -> String {
    let mut append = "console=ttyS0 quiet panic=-1 no_timer_check".to_owned();
    if let Some(khz) = host_tsc_khz() {
        append.push_str(&format!(" tsc_early_khz={khz}"));
    }
    append
}

/// The host's TSC rate in kHz, measured against the monotonic clock over 50 ms.
#[cfg(target_arch = "x86_64")]
fn host_tsc_khz() -> Option<u64> {
    use std::time::{Duration, Instant};
    // SAFETY: `rdtsc` exists on every x86_64 CPU and has no side effects.
    let tsc = || unsafe { core::arch::x86_64::_rdtsc() };
    let (t0, c0) = (Instant::now(), tsc());
    std::thread::sleep(Duration::from_millis(50));
    let (t1, c1) = (Instant::now(), tsc());
    let us = t1.duration_since(t0).as_micros() as u64;
    (us > 0).then(|| c1.wrapping_sub(c0) * 1000 / us)
}

/// Not measured off x86_64 (the guest calibrates itself).
#[cfg(not(target_arch = "x86_64"))]
fn host_tsc_khz() -> Option<u64> {
    None
}

/// Reads a file, with its path in the error.
fn read(p: &Path) -> Result<Vec<u8>, String> {
    fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
}

/// Adds the host's `redis-server` and the libraries `ldd` names; its version.
fn host_redis(root: &Path, files: &mut Vec<File>) -> Result<String, String> {
    let redis_bin = PathBuf::from("/usr/bin/redis-server");
    let version = Cmd::new(&redis_bin)
        .arg("--version")
        .read_stdout(root)
        .ok_or(
            "redis-server is missing: apt-get install redis-server (the Linux baseline runs it)",
        )?;
    files.push(("bin/redis-server".into(), read(&redis_bin)?, true));
    let ldd = Cmd::new("ldd")
        .arg(&redis_bin)
        .read_stdout(root)
        .ok_or("ldd /usr/bin/redis-server failed")?;
    for lib in shared_libraries(&ldd) {
        let data = read(Path::new(&lib))?;
        files.push((lib.trim_start_matches('/').to_owned(), data, true));
    }
    Ok(version.lines().next().unwrap_or("").to_owned())
}

/// Adds the packaged `redis-server` (the `redis-tools` binary, which runs as the server when
/// called `redis-server`) and every shared library of its `lib*` dependencies; its version.
fn packaged_redis(
    root: &Path,
    apt: &Apt,
    dir: &Path,
    files: &mut Vec<File>,
) -> Result<String, String> {
    let packages = apt.library_closure(root, "redis-tools")?;
    let mut version = String::new();
    for pkg in &packages {
        let deb = apt.download(pkg)?;
        let tree = unpack(root, dir, &deb, pkg)?;
        if pkg == "redis-tools" {
            files.push((
                "bin/redis-server".into(),
                read(&tree.join("usr/bin/redis-check-rdb"))?,
                true,
            ));
            version = Cmd::new("dpkg-deb")
                .arg("-f")
                .arg(&deb)
                .arg("Version")
                .read_stdout(root)
                .map(|v| format!("redis-tools {} (armhf)", v.trim()))
                .unwrap_or_else(|| "redis-tools (armhf)".into());
            continue;
        }
        let mut libs = Vec::new();
        shared_objects(&tree, &tree, &mut libs);
        for (rel, real) in libs {
            // A symbolic link is stored as a copy of what it names.
            files.push((rel, read(&real)?, true));
        }
    }
    Ok(version)
}

/// Every shared object (`*.so`, `*.so.*`, files or links) under the `lib` directories of an
/// unpacked package `tree`: its path in the tree and the file it is (a link resolved inside
/// the tree, never on the host).
fn shared_objects(tree: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(tree).unwrap_or(&path).to_owned();
        let in_lib = rel.starts_with("lib") || rel.starts_with("usr/lib");
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if in_lib || rel == Path::new("usr") {
                shared_objects(tree, &path, out);
            }
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if !in_lib || !(name.ends_with(".so") || name.contains(".so.")) {
            continue;
        }
        let mut real = path.clone();
        for _ in 0..8 {
            let Ok(target) = fs::read_link(&real) else {
                break;
            };
            real = match target.strip_prefix("/") {
                Ok(inside) => tree.join(inside),
                Err(_) => real.parent().unwrap_or(tree).join(target),
            };
        }
        if real.is_file() {
            out.push((rel.to_string_lossy().into_owned(), real));
        }
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
    fn depends_names_first_alternatives_once() {
        let meta = "Package: libsystemd0\n\
                    Pre-Depends: libc6 (>= 2.34)\n\
                    Depends: libc6 (>= 2.34), libcap2 (>= 1:2.10), liblz4-1 | liblz4-2, \
                    gcc-12-base:any, libzstd1\n\
                    Description: Depends: not a field\n";
        assert_eq!(
            depends(meta),
            ["libc6", "libcap2", "liblz4-1", "gcc-12-base", "libzstd1"]
        );
    }

    #[test]
    fn init_loads_the_modules_it_is_given() {
        let init = init_script(&["virtio_mmio", "virtio_net"]);
        assert!(init.starts_with("#!/bin/busybox sh\n"));
        assert!(init.contains("for m in virtio_mmio virtio_net; do"));
        assert!(init.contains("net: listening on"));
    }

    #[test]
    fn shared_objects_resolve_links_inside_the_tree() {
        let tree = std::env::temp_dir().join(format!("xtask-so-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tree);
        let lib = tree.join("lib/arm-linux-gnueabihf");
        fs::create_dir_all(&lib).unwrap();
        fs::create_dir_all(tree.join("usr/share/doc")).unwrap();
        fs::write(lib.join("libz.so.1.2.13"), b"elf").unwrap();
        fs::write(tree.join("usr/share/doc/x.so.txt"), b"doc").unwrap();
        std::os::unix::fs::symlink("libz.so.1.2.13", lib.join("libz.so.1")).unwrap();
        std::os::unix::fs::symlink(
            "/lib/arm-linux-gnueabihf/libz.so.1",
            tree.join("lib/libz.so"),
        )
        .unwrap();
        let mut found = Vec::new();
        shared_objects(&tree, &tree, &mut found);
        found.sort();
        let _ = fs::remove_dir_all(&tree);
        let names: Vec<&str> = found.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib/arm-linux-gnueabihf/libz.so.1",
                "lib/arm-linux-gnueabihf/libz.so.1.2.13",
                "lib/libz.so"
            ]
        );
        // Each resolves to the real file in the tree (the absolute link too).
        assert!(found
            .iter()
            .all(|(_, real)| real.ends_with("libz.so.1.2.13")));
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
