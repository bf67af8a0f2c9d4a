//! Where one hangar home keeps its files.
//!
//! Everything a daemon writes lives under one `HANGAR_HOME`, so two daemons
//! with two homes never interfere. The control socket sits in a `run` folder
//! of mode 0700: the folder, not the socket's own mode, is what keeps other
//! users out on every platform.

use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Paths {
    pub home: PathBuf,
}

impl Paths {
    pub fn new(home: PathBuf) -> Paths {
        Paths { home }
    }

    /// `HANGAR_HOME`, else the platform state dir (`$XDG_STATE_HOME/hangar`,
    /// default `~/.local/state/hangar`).
    pub fn from_env() -> Paths {
        if let Some(home) = std::env::var_os("HANGAR_HOME").filter(|h| !h.is_empty()) {
            return Paths::new(absolute(PathBuf::from(home)));
        }
        let state = std::env::var_os("XDG_STATE_HOME")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("/tmp"));
                home.join(".local").join("state")
            });
        Paths::new(absolute(state.join("hangar")))
    }

    pub fn run_dir(&self) -> PathBuf {
        self.home.join("run")
    }
    pub fn socket(&self) -> PathBuf {
        self.run_dir().join("hangar.sock")
    }
    pub fn lock(&self) -> PathBuf {
        self.run_dir().join("daemon.lock")
    }
    pub fn store(&self) -> PathBuf {
        self.home.join("state.db")
    }
    pub fn config(&self) -> PathBuf {
        self.home.join("config.toml")
    }
    pub fn log(&self) -> PathBuf {
        self.home.join("daemon.log")
    }
}

fn absolute(p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    }
}

/// Create `dir` (and parents) and force its mode to 0700.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Write `bytes` as the whole of `path`, mode 0600 whatever the umask, so
/// that a reader sees the old file or the new one and never half of it: a
/// temporary file in the same folder (named with this process's id, so two
/// processes writing the same file at once do not share one), synced, then
/// renamed over `path`. The folder must exist.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_whole(path, bytes, true)
}

/// `write_private` without the sync, for a file made again at every start
/// of the process that reads it (an agent's hook settings, its MCP config):
/// a reader still sees the old file or the new one, and a crash can only
/// lose a file the next start writes anyway. The sync cost 2-2.5 ms before
/// each pane's first fork (issue 48's timeline of a restore).
pub fn write_private_for_start(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_whole(path, bytes, false)
}

fn write_whole(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // Nothing half-written is left beside the file; the error is the
        // write's, which the caller gets.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_file_for_a_start_is_written_whole_and_private_like_any_other() {
        let dir = tempfile::TempDir::new().unwrap();
        let file = dir.path().join("settings.json");
        write_private_for_start(&file, b"old").unwrap();
        write_private_for_start(&file, b"new").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left beside it");
    }

    #[test]
    fn a_private_write_replaces_the_whole_file_with_mode_0600_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret.json");
        std::fs::write(&file, "an older and much longer text").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&file, b"new").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        assert_eq!(mode(&file), 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret.json"]);
    }

    #[test]
    fn a_private_write_into_a_missing_folder_fails_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gone").join("secret.json");
        assert!(write_private(&file, b"x").is_err());
        assert!(!dir.path().join("gone").exists());
    }
}
