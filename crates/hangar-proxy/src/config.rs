//! `[proxy]` in config.toml: the proxy's own section. The daemon's
//! config.rs reads it as one field and hands it to `Proxy::new` by value;
//! its keys are the ones docs/src/proxy.md documents (config.toml's `[proxy]`)
//! and must never be renamed.

use std::path::PathBuf;

use serde::Deserialize;

/// `[proxy]` in config.toml.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// Capture claude, codex and OpenCode sessions' API traffic (`hangar new
    /// --no-capture` turns it off for one session).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Refuse to start an agent whose capture cannot be set up.
    #[serde(default)]
    pub required: bool,
    /// The port on 127.0.0.1; 0 picks a free one.
    #[serde(default)]
    pub port: u16,
    /// Hosts whose traffic is decrypted and recorded (`*.example.com` for
    /// subdomains). Everything else is tunnelled untouched.
    #[serde(default = "default_allow_hosts")]
    pub allow_hosts: Vec<String>,
    /// An extra CA (PEM) trusted for upstream connections, on top of the
    /// system's roots (a corporate proxy, or a test server).
    #[serde(default)]
    pub extra_ca_file: Option<PathBuf>,
    /// The system CA bundle codex's `ca-bundle.pem` starts from (default:
    /// the daemon's `SSL_CERT_FILE`, else the usual /etc/ssl paths).
    #[serde(default)]
    pub system_ca_bundle: Option<PathBuf>,
    /// A capture file is rotated once it would grow past this.
    #[serde(default = "default_max_capture_bytes")]
    pub max_capture_bytes: u64,
    /// Capture files kept per session.
    #[serde(default = "default_max_files")]
    pub max_files: usize,
    /// Most bytes of one request body, and of one response, recorded.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
}

fn yes() -> bool {
    true
}
fn default_allow_hosts() -> Vec<String> {
    vec!["api.anthropic.com".into(), "api.openai.com".into()]
}
fn default_max_capture_bytes() -> u64 {
    16 * 1024 * 1024
}
fn default_max_files() -> usize {
    8
}
fn default_max_body_bytes() -> usize {
    1024 * 1024
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            enabled: true,
            required: false,
            port: 0,
            allow_hosts: default_allow_hosts(),
            extra_ca_file: None,
            system_ca_bundle: None,
            max_capture_bytes: default_max_capture_bytes(),
            max_files: default_max_files(),
            max_body_bytes: default_max_body_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_section_has_safe_defaults_and_refuses_unknown_keys() {
        let c: ProxyConfig = toml::from_str("").unwrap();
        assert!(c.enabled && !c.required);
        assert_eq!(c.allow_hosts, vec!["api.anthropic.com", "api.openai.com"]);
        assert!(toml::from_str::<ProxyConfig>("bogus = 1").is_err());
        let c: ProxyConfig =
            toml::from_str("allow_hosts = [\"localhost\"]\nrequired = true\nmax_files = 2")
                .unwrap();
        assert_eq!(c.allow_hosts, vec!["localhost"]);
        assert!(c.required);
        assert_eq!(c.max_files, 2);
    }
}
