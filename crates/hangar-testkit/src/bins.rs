//! The workspace's programs, in the cargo target folder the running test
//! binary was built into.
//!
//! A test binary lives in `target/<profile>/deps/`; the programs
//! `cargo build --workspace --bins` makes are in `target/<profile>/`. The
//! same rule as assert_cmd's `cargo_bin` (its `target_dir()`), which works
//! for any `CARGO_TARGET_DIR` and profile and needs no `CARGO_BIN_EXE_*`
//! (cargo sets those only for a package's own binaries).

use std::path::PathBuf;

/// `target/<profile>`, found from the running test binary.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let mut dir = exe
        .parent()
        .expect("the test binary is in a folder")
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// A workspace program by name; panics, saying how to build it, when it is
/// missing.
pub fn bin(name: &str) -> PathBuf {
    let path = target_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

/// `hangar`.
pub fn hangar_bin() -> PathBuf {
    bin("hangar")
}

/// `hangar-fake-agent`, the test double of every provider.
pub fn fake_agent_bin() -> PathBuf {
    bin("hangar-fake-agent")
}

/// `hangar-fake-model-api`, the scripted model API.
pub fn fake_api_bin() -> PathBuf {
    bin("hangar-fake-model-api")
}
