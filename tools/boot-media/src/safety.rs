//! Whether `cargo xtask flash` may write to a target, decided by a pure function over
//! injectable `/proc` and `/sys` roots ([`SysRoots`]) and the target's file type
//! ([`TargetStat`]), so that every refusal is unit-tested with fake trees and plain files,
//! never with a real disk.
//!
//! Refused: a target that is neither a block device nor a regular file (a directory, a
//! character device such as `/dev/null`, a FIFO); a partition (the medium is a whole-disk
//! image); a block device that does not exist; a disk that is mounted or has a mounted or
//! swapping partition; the disk holding `/` (also through device-mapper/LVM/RAID slaves); a
//! regular file that backs a loop device (which may be mounted); an image file in a directory
//! that does not exist.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the kernel's views of the system are read from (`/proc`, `/sys` normally).
#[derive(Clone, Debug)]
pub struct SysRoots {
    /// `/proc`.
    pub proc: PathBuf,
    /// `/sys`.
    pub sys: PathBuf,
}

impl SysRoots {
    /// The real `/proc` and `/sys`.
    pub fn real() -> Self {
        Self {
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
        }
    }
}

/// What kind of file the target is (from `stat`, see [`stat`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetStat {
    /// A block device with this device number.
    Block {
        /// Major number.
        major: u32,
        /// Minor number.
        minor: u32,
    },
    /// A regular file of this length.
    Regular {
        /// Length in bytes.
        len: u64,
    },
    /// Does not exist.
    Missing,
    /// Something else (directory, character device, FIFO, socket), named.
    Other(&'static str),
}

/// Stats `path` (following symbolic links, as `/dev/disk/by-id/...` names are).
pub fn stat(path: &Path) -> TargetStat {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(meta) = fs::metadata(path) else {
        return TargetStat::Missing;
    };
    let ft = meta.file_type();
    if ft.is_block_device() {
        let rdev = meta.rdev();
        TargetStat::Block {
            major: libc::major(rdev),
            minor: libc::minor(rdev),
        }
    } else if ft.is_file() {
        TargetStat::Regular { len: meta.len() }
    } else if ft.is_dir() {
        TargetStat::Other("a directory")
    } else if ft.is_char_device() {
        TargetStat::Other("a character device")
    } else if ft.is_fifo() {
        TargetStat::Other("a FIFO")
    } else if ft.is_socket() {
        TargetStat::Other("a socket")
    } else {
        TargetStat::Other("not a regular file or block device")
    }
}

/// How the target was named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// `--device`: a whole disk.
    Device,
    /// `--image`: a file (created if missing).
    Image,
}

/// A target that may be written, with what to show before asking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A whole disk.
    Disk {
        /// Kernel name (`sdb`, `mmcblk0`).
        name: String,
        /// Vendor and model from sysfs, `"(unknown model)"` if absent.
        model: String,
        /// Size in bytes.
        size: u64,
        /// Whether sysfs marks it removable.
        removable: bool,
    },
    /// A regular file; `len` 0 if it is new.
    File {
        /// Whether it exists.
        exists: bool,
        /// Its length.
        len: u64,
    },
}

impl Target {
    /// One line for the confirmation prompt.
    pub fn describe(&self, path: &Path) -> String {
        match self {
            Target::Disk {
                name,
                model,
                size,
                removable,
            } => format!(
                "{}: disk {name}, {model}, {} ({size} bytes){}",
                path.display(),
                human(*size),
                if *removable {
                    ", removable"
                } else {
                    ", NOT marked removable"
                }
            ),
            Target::File { exists: false, .. } => {
                format!("{}: a new file", path.display())
            }
            Target::File { len, .. } => {
                format!(
                    "{}: an existing file of {} ({len} bytes)",
                    path.display(),
                    human(*len)
                )
            }
        }
    }
}

/// `12.3 MiB`-style size.
pub fn human(bytes: u64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

fn read_trim(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// The sysfs directory of block device `major:minor` (`/sys/dev/block/M:m` resolved), if any.
fn sysfs_dir(roots: &SysRoots, major: u32, minor: u32) -> Option<PathBuf> {
    let link = roots.sys.join("dev/block").join(format!("{major}:{minor}"));
    let target = fs::read_link(&link).ok()?;
    let dir = if target.is_absolute() {
        target
    } else {
        link.parent()?.join(target)
    };
    fs::canonicalize(&dir).ok().or(Some(dir))
}

/// A block device as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockDev {
    /// Its kernel name (`sdb1`).
    name: String,
    /// The whole disk's kernel name (`sdb` for `sdb1`, itself for a disk).
    disk: String,
    /// Whether it is a partition.
    partition: bool,
}

fn block_dev(roots: &SysRoots, major: u32, minor: u32) -> Option<BlockDev> {
    let dir = sysfs_dir(roots, major, minor)?;
    let name = dir.file_name()?.to_str()?.to_owned();
    let partition = dir.join("partition").exists();
    let disk = if partition {
        dir.parent()?.file_name()?.to_str()?.to_owned()
    } else {
        name.clone()
    };
    Some(BlockDev {
        name,
        disk,
        partition,
    })
}

/// `major:minor` of `disk` and of each of its partitions.
fn disk_and_partitions(roots: &SysRoots, disk: &str) -> Vec<(String, String)> {
    let dir = roots.sys.join("block").join(disk);
    let mut out = Vec::new();
    if let Some(dev) = read_trim(&dir.join("dev")) {
        out.push((disk.to_owned(), dev));
    }
    for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.join("partition").exists() {
            if let (Some(dev), Some(name)) = (
                read_trim(&p.join("dev")),
                p.file_name().and_then(|n| n.to_str()),
            ) {
                out.push((name.to_owned(), dev));
            }
        }
    }
    out
}

/// The whole disks under block device `major:minor`: itself (or its disk, for a partition),
/// or, for a device-mapper/MD device, the disks of its `slaves` (recursively).
fn underlying_disks(roots: &SysRoots, dev: &str, depth: u32) -> Vec<String> {
    let Some((major, minor)) = dev
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
    else {
        return Vec::new();
    };
    let Some(bd) = block_dev(roots, major, minor) else {
        return Vec::new();
    };
    let slaves = roots.sys.join("block").join(&bd.disk).join("slaves");
    let mut disks = Vec::new();
    if depth < 8 {
        for s in fs::read_dir(&slaves).into_iter().flatten().flatten() {
            let Some(slave_dev) = read_trim(&s.path().join("dev")) else {
                continue;
            };
            disks.extend(underlying_disks(roots, &slave_dev, depth + 1));
        }
    }
    if disks.is_empty() {
        disks.push(bd.disk);
    }
    disks
}

/// One line of `/proc/self/mountinfo`: the mounted device number and the mount point.
fn mounts(roots: &SysRoots) -> Result<Vec<(String, String)>, String> {
    let path = roots.proc.join("self/mountinfo");
    let text = fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}; refusing to write", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let dev = f.nth(2)?.to_owned();
            let point = f.nth(1)?.to_owned();
            Some((dev, point))
        })
        .collect())
}

/// The sources of `/proc/mounts` (first field), for names mountinfo may not resolve.
fn mount_sources(roots: &SysRoots) -> Vec<String> {
    fs::read_to_string(roots.proc.join("mounts"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').next().map(String::from))
        .collect()
}

/// The active swap areas (`/proc/swaps`, first column).
fn swaps(roots: &SysRoots) -> Vec<String> {
    fs::read_to_string(roots.proc.join("swaps"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// Decides whether `path` (of type `stat`, named as `intent`) may be overwritten.
pub fn check(
    path: &Path,
    stat: TargetStat,
    intent: Intent,
    roots: &SysRoots,
) -> Result<Target, String> {
    let shown = path.display();
    match (stat, intent) {
        (TargetStat::Other(what), _) => Err(format!(
            "{shown} is {what}, neither a block device nor a regular file: refusing to write"
        )),
        (TargetStat::Missing, Intent::Device) => Err(format!(
            "{shown} does not exist (plug the card or stick in and look at `lsblk`), refusing"
        )),
        (TargetStat::Missing, Intent::Image) => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if parent.is_dir() {
                Ok(Target::File {
                    exists: false,
                    len: 0,
                })
            } else {
                Err(format!(
                    "the directory {} of {shown} does not exist",
                    parent.display()
                ))
            }
        }
        (TargetStat::Regular { len }, _) => {
            check_not_loop_backing(path, roots)?;
            Ok(Target::File { exists: true, len })
        }
        (TargetStat::Block { major, minor }, _) => check_disk(path, major, minor, roots),
    }
}

/// Refuses a regular file that a loop device uses as its backing file.
fn check_not_loop_backing(path: &Path, roots: &SysRoots) -> Result<(), String> {
    let me = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    for entry in fs::read_dir(roots.sys.join("block")).into_iter().flatten() {
        let Ok(entry) = entry else { continue };
        let Some(backing) = read_trim(&entry.path().join("loop/backing_file")) else {
            continue;
        };
        let backing = backing.trim_end_matches(" (deleted)");
        if Path::new(backing) == me || Path::new(backing) == path {
            return Err(format!(
                "{} is the backing file of /dev/{} (a loop device, which may be mounted): \
                 detach it first (`losetup -d /dev/{}`), refusing to write",
                path.display(),
                entry.file_name().to_string_lossy(),
                entry.file_name().to_string_lossy()
            ));
        }
    }
    Ok(())
}

fn check_disk(path: &Path, major: u32, minor: u32, roots: &SysRoots) -> Result<Target, String> {
    let shown = path.display();
    let bd = block_dev(roots, major, minor).ok_or_else(|| {
        format!(
            "{shown} is block device {major}:{minor}, but {}/dev/block/{major}:{minor} does \
             not describe it: refusing to write to a device that cannot be identified",
            roots.sys.display()
        )
    })?;
    if bd.partition {
        return Err(format!(
            "{shown} is partition {} of disk {}: the medium is a whole-disk image; give the \
             disk (/dev/{}) instead",
            bd.name, bd.disk, bd.disk
        ));
    }
    let devs = disk_and_partitions(roots, &bd.disk);
    let dev_nums: Vec<&str> = devs.iter().map(|(_, d)| d.as_str()).collect();
    let names: Vec<String> = devs.iter().map(|(n, _)| format!("/dev/{n}")).collect();

    let mounts = mounts(roots)?;
    if let Some((dev, point)) = mounts.iter().find(|(d, _)| dev_nums.contains(&d.as_str())) {
        let part = devs
            .iter()
            .find(|(_, d)| d == dev)
            .map_or(dev.clone(), |(n, _)| n.clone());
        return Err(format!(
            "{shown} is mounted: /dev/{part} on {point}; unmount it first (`umount {point}`), \
             refusing to write"
        ));
    }
    if let Some(src) = mount_sources(roots)
        .into_iter()
        .find(|s| names.contains(s) || Path::new(s) == path)
    {
        return Err(format!(
            "{shown} is mounted ({src} in {}/mounts), refusing to write",
            roots.proc.display()
        ));
    }
    if let Some(swap) = swaps(roots).into_iter().find(|s| names.contains(s)) {
        return Err(format!(
            "{shown} holds an active swap area ({swap}), refusing to write"
        ));
    }
    // The disk holding `/`: whatever device the root mount's number leads to.
    if let Some((root_dev, _)) = mounts.iter().find(|(_, p)| p == "/") {
        if underlying_disks(roots, root_dev, 0).contains(&bd.disk) {
            return Err(format!(
                "{shown} is the disk that holds `/` (the running system), refusing to write"
            ));
        }
    }

    let dir = roots.sys.join("block").join(&bd.disk);
    let sectors: u64 = read_trim(&dir.join("size"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("cannot read the size of {shown} from sysfs, refusing"))?;
    if sectors == 0 {
        return Err(format!(
            "{shown} has size 0 (no card in the reader?), refusing to write"
        ));
    }
    let vendor = read_trim(&dir.join("device/vendor")).unwrap_or_default();
    let model = read_trim(&dir.join("device/model"))
        .or_else(|| read_trim(&dir.join("device/name")))
        .unwrap_or_default();
    let model = match (vendor.is_empty(), model.is_empty()) {
        (true, true) => "(unknown model)".to_owned(),
        (false, false) => format!("{vendor} {model}"),
        _ => format!("{vendor}{model}"),
    };
    Ok(Target::Disk {
        name: bd.disk,
        model,
        size: sectors * 512,
        removable: read_trim(&dir.join("removable")).as_deref() == Some("1"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fake /proc and /sys: disks sda (sda1 = `/`, sda2 = swap), sdb (a USB stick with
    /// sdb1), mmcblk0 (an SD card, sdb1-free), dm-0 on sdc, loop0 backed by a file.
    struct Fake {
        dir: PathBuf,
        roots: SysRoots,
    }

    impl Fake {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("xtask-flash-safety-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            let roots = SysRoots {
                proc: dir.join("proc"),
                sys: dir.join("sys"),
            };
            fs::create_dir_all(roots.proc.join("self")).unwrap();
            fs::create_dir_all(roots.sys.join("dev/block")).unwrap();
            let f = Fake { dir, roots };
            f.disk(
                "sda",
                "8:0",
                &["sda1:8:1", "sda2:8:2"],
                "ATA",
                "Samsung SSD",
                0,
            );
            f.disk("sdb", "8:16", &["sdb1:8:17"], "Kingston", "DataTraveler", 1);
            f.disk("mmcblk0", "179:0", &["mmcblk0p1:179:1"], "", "", 1);
            fs::write(f.roots.sys.join("block/mmcblk0/device/name"), "SD32G\n").unwrap();
            f.disk("sdc", "8:32", &[], "ATA", "Other", 0);
            f.disk("dm-0", "254:0", &[], "", "", 0);
            let slave = f.roots.sys.join("block/dm-0/slaves/sdc");
            fs::create_dir_all(&slave).unwrap();
            fs::write(slave.join("dev"), "8:32\n").unwrap();
            f.disk("loop0", "7:0", &[], "", "", 0);
            fs::create_dir_all(f.roots.sys.join("block/loop0/loop")).unwrap();
            f.mountinfo(&[("8:1", "/"), ("0:5", "/proc")]);
            fs::write(
                f.roots.proc.join("swaps"),
                "Filename Type Size Used Priority\n/dev/sda2 partition 1024 0 -2\n",
            )
            .unwrap();
            f
        }

        /// A disk `name` (`maj:min`) with partitions `"name:maj:min"`.
        fn disk(&self, name: &str, dev: &str, parts: &[&str], vendor: &str, model: &str, rm: u8) {
            let real = self.roots.sys.join("devices/virtual/block").join(name);
            fs::create_dir_all(real.join("device")).unwrap();
            fs::write(real.join("dev"), format!("{dev}\n")).unwrap();
            fs::write(real.join("size"), "30310400\n").unwrap();
            fs::write(real.join("removable"), format!("{rm}\n")).unwrap();
            if !vendor.is_empty() {
                fs::write(real.join("device/vendor"), format!("{vendor}  \n")).unwrap();
            }
            if !model.is_empty() {
                fs::write(real.join("device/model"), format!("{model}\n")).unwrap();
            }
            symlink(&real, self.roots.sys.join("block").join(name)).unwrap_or_else(|_| {
                fs::create_dir_all(self.roots.sys.join("block")).unwrap();
                symlink(&real, self.roots.sys.join("block").join(name)).unwrap()
            });
            symlink(
                format!("../../devices/virtual/block/{name}"),
                self.roots.sys.join("dev/block").join(dev),
            )
            .unwrap();
            for p in parts {
                let (pname, pdev) = p.split_once(':').unwrap();
                let pdir = real.join(pname);
                fs::create_dir_all(&pdir).unwrap();
                fs::write(pdir.join("dev"), format!("{pdev}\n")).unwrap();
                fs::write(pdir.join("partition"), "1\n").unwrap();
                symlink(
                    format!("../../devices/virtual/block/{name}/{pname}"),
                    self.roots.sys.join("dev/block").join(pdev),
                )
                .unwrap();
            }
        }

        fn mountinfo(&self, mounts: &[(&str, &str)]) {
            let text: String = mounts
                .iter()
                .enumerate()
                .map(|(i, (dev, point))| {
                    format!(
                        "{} 1 {dev} / {point} rw,relatime shared:1 - ext4 /dev/x rw\n",
                        20 + i
                    )
                })
                .collect();
            fs::write(self.roots.proc.join("self/mountinfo"), text).unwrap();
        }

        fn check(&self, path: &str, stat: TargetStat, intent: Intent) -> Result<Target, String> {
            check(Path::new(path), stat, intent, &self.roots)
        }

        /// Asserts that `path` (of `stat`) is refused as a `--device` target with a reason that
        /// says each of `says`.
        fn refuses(&self, path: &str, stat: TargetStat, says: &[&str]) {
            let e = self.check(path, stat, Intent::Device).unwrap_err();
            for s in says {
                assert!(e.contains(s), "{path}: {e}");
            }
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    fn block(major: u32, minor: u32) -> TargetStat {
        TargetStat::Block { major, minor }
    }

    #[test]
    fn an_unmounted_removable_disk_is_accepted_with_model_and_size() {
        let f = Fake::new("ok");
        let t = f.check("/dev/sdb", block(8, 16), Intent::Device).unwrap();
        assert_eq!(
            t,
            Target::Disk {
                name: "sdb".into(),
                model: "Kingston DataTraveler".into(),
                size: 30310400 * 512,
                removable: true,
            }
        );
        assert!(t.describe(Path::new("/dev/sdb")).contains("14.5 GiB"));
        let sd = f
            .check("/dev/mmcblk0", block(179, 0), Intent::Device)
            .unwrap();
        assert!(matches!(sd, Target::Disk { ref model, .. } if model == "SD32G"));
    }

    #[test]
    fn the_root_disk_is_refused() {
        let f = Fake::new("root");
        f.refuses("/dev/sda", block(8, 0), &["mounted"]);
        // Also when `/` is on device-mapper over sdc and nothing of sdc is mounted directly.
        f.mountinfo(&[("254:0", "/")]);
        f.refuses("/dev/sdc", block(8, 32), &["holds `/`"]);
        // A root on a partition of sda, sda otherwise unmounted: still the root disk.
        f.mountinfo(&[("8:1", "/")]);
        fs::write(f.roots.proc.join("swaps"), "Filename\n").unwrap();
        f.refuses("/dev/sda", block(8, 0), &["/dev/sda1 on /"]);
    }

    #[test]
    fn a_disk_with_a_mounted_partition_is_refused() {
        let f = Fake::new("mounted");
        f.mountinfo(&[("8:1", "/"), ("8:17", "/media/stick")]);
        f.refuses(
            "/dev/sdb",
            block(8, 16),
            &["/dev/sdb1 on /media/stick", "umount /media/stick"],
        );
        // Mounted whole (no partition table).
        f.mountinfo(&[("8:1", "/"), ("179:0", "/mnt")]);
        f.refuses("/dev/mmcblk0", block(179, 0), &["mounted"]);
        // Listed only in /proc/mounts (e.g. a mount namespace's view).
        f.mountinfo(&[("8:1", "/")]);
        fs::write(f.roots.proc.join("mounts"), "/dev/sdb1 /x vfat rw 0 0\n").unwrap();
        f.refuses("/dev/sdb", block(8, 16), &["mounted (/dev/sdb1"]);
    }

    #[test]
    fn a_swapping_disk_is_refused() {
        let f = Fake::new("swap");
        f.mountinfo(&[("254:0", "/")]);
        f.refuses("/dev/sda", block(8, 0), &["swap"]);
    }

    #[test]
    fn a_partition_is_refused() {
        let f = Fake::new("part");
        f.refuses("/dev/sdb1", block(8, 17), &["partition sdb1 of disk sdb"]);
    }

    #[test]
    fn unknown_missing_and_odd_targets_are_refused() {
        let f = Fake::new("odd");
        f.refuses("/dev/sdz", block(8, 99), &["cannot be identified"]);
        // An empty card reader.
        fs::write(f.roots.sys.join("block/sdb/size"), "0\n").unwrap();
        f.refuses("/dev/sdb", block(8, 16), &["size 0"]);
        f.refuses("/dev/sdq", TargetStat::Missing, &["does not exist"]);
        // Real files of the wrong kind, through the real stat.
        for (path, what) in [("/dev/null", "character device"), ("/tmp", "directory")] {
            let e = f
                .check(path, stat(Path::new(path)), Intent::Device)
                .unwrap_err();
            assert!(e.contains(what) && e.contains("neither"), "{e}");
        }
        let e = f
            .check(
                "/no/such/dir/x.img",
                stat(Path::new("/no/such/dir/x.img")),
                Intent::Image,
            )
            .unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn image_files_are_accepted_unless_a_loop_device_uses_them() {
        let f = Fake::new("loop");
        let file = f.dir.join("disk.img");
        assert_eq!(
            check(&file, stat(&file), Intent::Image, &f.roots).unwrap(),
            Target::File {
                exists: false,
                len: 0
            }
        );
        fs::write(&file, [0u8; 4096]).unwrap();
        assert_eq!(
            check(&file, stat(&file), Intent::Image, &f.roots).unwrap(),
            Target::File {
                exists: true,
                len: 4096
            }
        );
        // The same file as a loop device's backing file.
        fs::write(
            f.roots.sys.join("block/loop0/loop/backing_file"),
            format!("{}\n", fs::canonicalize(&file).unwrap().display()),
        )
        .unwrap();
        let e = check(&file, stat(&file), Intent::Image, &f.roots).unwrap_err();
        assert!(e.contains("backing file of /dev/loop0"), "{e}");
        // A file given with --device is judged as a file too.
        let e = check(&file, stat(&file), Intent::Device, &f.roots).unwrap_err();
        assert!(e.contains("loop0"), "{e}");
    }

    #[test]
    fn unreadable_mount_table_refuses() {
        let f = Fake::new("nomounts");
        fs::remove_file(f.roots.proc.join("self/mountinfo")).unwrap();
        f.refuses("/dev/sdb", block(8, 16), &["mountinfo"]);
    }

    #[test]
    fn the_real_system_disk_is_refused() {
        // On the machine running the tests: whatever holds `/` must be refused, read-only.
        let roots = SysRoots::real();
        let Ok(text) = fs::read_to_string("/proc/self/mountinfo") else {
            return;
        };
        let Some(dev) = text.lines().find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.get(4) == Some(&"/")).then(|| f[2].to_owned())
        }) else {
            return;
        };
        let disks = underlying_disks(&roots, &dev, 0);
        for disk in disks {
            let Some(num) = read_trim(&roots.sys.join("block").join(&disk).join("dev")) else {
                continue;
            };
            let (ma, mi) = num.split_once(':').unwrap();
            let t = TargetStat::Block {
                major: ma.parse().unwrap(),
                minor: mi.parse().unwrap(),
            };
            let path = PathBuf::from(format!("/dev/{disk}"));
            assert!(check(&path, t, Intent::Device, &roots).is_err(), "{disk}");
        }
    }
}
