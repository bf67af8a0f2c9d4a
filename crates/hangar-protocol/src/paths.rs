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
