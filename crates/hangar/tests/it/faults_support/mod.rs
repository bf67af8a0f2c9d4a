//! Extra harness for the fault suite (issue 18): a small tmpfs mounted as a
//! test's `HANGAR_HOME` (to fill it up or make it read-only under a running
//! daemon), and a waiter that reports how long a command took when it has
//! to be bounded.
//!
//! Mounting needs root (CI runs as root); where it is not permitted the
//! caller prints one SKIPPED line and returns. A mount is always detached on
//! drop, even when the test panicked, so no tmpfs outlives its test.

#![allow(dead_code)] // each fault test binary uses a different part

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A tmpfs mounted on a folder; detached (lazily, so a daemon still holding
/// files in it cannot make the unmount fail) when dropped.
pub struct Tmpfs {
    pub path: PathBuf,
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("a path has no NUL byte")
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_kib` on `path` (created if missing), mode
    /// 0700. `Err` says why mounting is not possible here.
    pub fn mount(path: &Path, size_kib: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(path).map_err(|e| format!("create {}: {e}", path.display()))?;
        let target = cstr(path);
        let fstype = CString::new("tmpfs").expect("static");
        let data = CString::new(format!("size={size_kib}k,mode=0700")).expect("no NUL");
        // SAFETY: every pointer is a valid NUL-terminated string that lives
        // across the call.
        let rc = unsafe {
            libc::mount(
                fstype.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(format!(
                "cannot mount a tmpfs on {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(Tmpfs {
            path: path.to_path_buf(),
        })
    }

    /// Remounts read-only (`ro`) or read-write again.
    pub fn remount(&self, read_only: bool) {
        let target = cstr(&self.path);
        let flags = libc::MS_REMOUNT
            | libc::MS_NOSUID
            | libc::MS_NODEV
            | if read_only { libc::MS_RDONLY } else { 0 };
        // SAFETY: as in `mount`; a remount takes no source or data.
        let rc = unsafe {
            libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            )
        };
        assert_eq!(
            rc,
            0,
            "remount {} {}: {}",
            self.path.display(),
            if read_only { "ro" } else { "rw" },
            std::io::Error::last_os_error()
        );
    }

    /// Writes a ballast file until the tmpfs is full; returns its path.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let ballast = self.path.join("ballast");
        let mut f = std::fs::File::create(&ballast).expect("create ballast");
        let block = vec![0x5au8; 4096];
        loop {
            match f.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", self.path.display()),
            }
        }
        let _ = f.sync_all();
        ballast
    }

    /// Free bytes left on the tmpfs.
    pub fn free_bytes(&self) -> u64 {
        let target = cstr(&self.path);
        // SAFETY: statvfs writes into the zeroed struct we own.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::statvfs(target.as_ptr(), &mut s) };
        assert_eq!(rc, 0, "statvfs {}", self.path.display());
        s.f_bavail as u64 * s.f_frsize as u64
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let target = cstr(&self.path);
        // SAFETY: a valid path string; MNT_DETACH never blocks on busy files.
        unsafe {
            libc::umount2(target.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// A read-only bind mount of a folder stacked on the folder itself: every
/// path lookup under it from now on meets a read-only file system (`EROFS`
/// on any create, open for writing, rename or unlink), while files a
/// process already holds open keep their writable mount. That is what a
/// running daemon can meet: Linux refuses to remount a file system
/// read-only while a process has a file open for writing on it (EBUSY).
pub struct ReadOnlyBind {
    pub path: PathBuf,
}

impl ReadOnlyBind {
    pub fn over(path: &Path) -> Result<ReadOnlyBind, String> {
        let target = cstr(path);
        // SAFETY: valid NUL-terminated strings; null data is allowed.
        let rc = unsafe {
            libc::mount(
                target.as_ptr(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(format!(
                "cannot bind-mount {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        let bind = ReadOnlyBind {
            path: path.to_path_buf(),
        };
        // SAFETY: as above; a remount of the new bind takes no source.
        let rc = unsafe {
            libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(format!(
                "cannot make the bind of {} read-only: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(bind)
    }
}

impl Drop for ReadOnlyBind {
    fn drop(&mut self) {
        let target = cstr(&self.path);
        // SAFETY: as in `Tmpfs::drop`; detaches the topmost mount, ours.
        unsafe {
            libc::umount2(target.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// The one line a test prints when this machine cannot run it.
pub fn skip(test: &str, why: &str) {
    hangar_testkit::required::missing(test, why);
}

/// Runs `cmd` to completion but kills it after `bound`; returns its output
/// and how long it took, or panics naming `what` when it hung.
pub fn run_bounded(mut cmd: Command, bound: Duration, what: &str) -> (Output, Duration) {
    let begun = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start command");
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if begun.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} hung: no answer within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = begun.elapsed();
    let out = child.wait_with_output().expect("collect output");
    (out, took)
}
