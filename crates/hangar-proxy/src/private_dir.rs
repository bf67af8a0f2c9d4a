//! The proxy's folders (the CA's, each session's capture folder) hold keys
//! and recorded traffic: they are created mode 0700, whatever the umask.

use std::path::Path;

/// Create `dir` (and parents) and force its mode to 0700.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
