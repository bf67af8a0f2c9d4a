//! Per-session MCP tokens and the MCP config file an agent is given.
//!
//! A token is 256 random bits, minted at each spawn of a session that gets
//! orchestration. It lives in the daemon's memory and in the session's MCP
//! config file (`$HANGAR_HOME/mcp/<id>.json`, mode 0600, in a 0700 folder),
//! which is what claude reads with `--mcp-config` and what tests and people
//! read to drive `hangar mcp` by hand. It must never be logged or journaled.

use std::path::Path;

use serde_json::json;

use hangar_providers::launch::McpServer;

/// A fresh token: two v4 uuids (OS randomness), hex.
pub fn mint() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Compare without an early exit, so timing does not reveal a prefix.
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Claude Code's MCP config document for hangar's server.
pub fn config_document(server: &McpServer) -> serde_json::Value {
    json!({
        "mcpServers": {
            "hangar": {
                "command": server.command.display().to_string(),
                "args": server.args,
                "env": server.env,
            }
        }
    })
}

/// Write the session's MCP config file (0600) in a private folder.
pub fn write_config(dir: &Path, server: &McpServer) -> std::io::Result<()> {
    crate::paths::ensure_private_dir(dir)?;
    let bytes = serde_json::to_vec_pretty(&config_document(server))?;
    crate::paths::write_private_for_start(&server.config_file, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    #[test]
    fn tokens_are_long_distinct_and_compared_exactly() {
        let (a, b) = (mint(), mint());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &b));
        assert!(!same(&a, &a[..63]));
    }

    #[test]
    fn the_config_file_is_claudes_format_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mcp = dir.path().join("mcp");
        let server = McpServer {
            command: PathBuf::from("/bin/hangar"),
            args: vec!["mcp".into(), "--session".into(), "s1".into()],
            env: BTreeMap::from([("HANGAR_MCP_TOKEN".to_owned(), "tok".to_owned())]),
            config_file: mcp.join("s1.json"),
        };
        write_config(&mcp, &server).unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&server.config_file).unwrap()).unwrap();
        assert_eq!(v["mcpServers"]["hangar"]["command"], "/bin/hangar");
        assert_eq!(v["mcpServers"]["hangar"]["args"][2], "s1");
        assert_eq!(v["mcpServers"]["hangar"]["env"]["HANGAR_MCP_TOKEN"], "tok");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&server.config_file), 0o600);
        assert_eq!(mode(&mcp), 0o700);
    }
}
