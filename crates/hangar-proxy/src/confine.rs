//! A sandboxed session's grant (issue 32): the proxy is the sandbox's only
//! way out, so for such a session it refuses every host that is neither
//! captured (`[proxy] allow_hosts`) nor named by `[sandbox] allow_hosts`, and
//! it puts the real API key, which never enters the sandbox, on the
//! requests the agent sends to a captured host in place of the placeholder
//! the agent was given.

use hyper::header::{HeaderMap, HeaderValue};

/// A real credential and the placeholder the agent holds instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Secret {
    pub placeholder: String,
    pub real: String,
}

/// What a sandboxed session's grant is confined to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Hosts tunnelled (never decrypted) on top of the captured ones
    /// (`[sandbox] allow_hosts`; `*.example.com` for subdomains).
    pub extra_hosts: Vec<String>,
    /// Credentials put back on requests to a captured host.
    pub secrets: Vec<Secret>,
}

impl Confinement {
    /// Whether a confined session may reach `host`, given the captured list.
    pub fn allows(&self, captured: &[String], host: &str) -> bool {
        crate::relay::host_allowed(captured, host)
            || crate::relay::host_allowed(&self.extra_hosts, host)
    }

    /// Replace each placeholder in the request's header values by its real
    /// credential (`x-api-key: P`, `Authorization: Bearer P`). Returns how
    /// many values changed.
    pub fn put_back(&self, headers: &mut HeaderMap) -> usize {
        let mut changed = 0;
        for value in headers.values_mut() {
            let Ok(text) = value.to_str() else { continue };
            let mut text = text.to_owned();
            let mut hit = false;
            for s in &self.secrets {
                if !s.placeholder.is_empty() && text.contains(&s.placeholder) {
                    text = text.replace(&s.placeholder, &s.real);
                    hit = true;
                }
            }
            if hit && let Ok(mut v) = HeaderValue::from_str(&text) {
                v.set_sensitive(true);
                *value = v;
                changed += 1;
            }
        }
        changed
    }

    /// The refusal a confined session gets for a host off its lists.
    pub fn refusal(host: &str) -> String {
        format!(
            "hangar sandbox: {host} is not reachable from this sandboxed session: only the \
             provider's API ([proxy] allow_hosts) and [sandbox] allow_hosts are"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_hosts_are_reachable_and_placeholders_become_the_real_key() {
        let c = Confinement {
            extra_hosts: vec!["*.npmjs.org".into()],
            secrets: vec![Secret {
                placeholder: "sk-ph-1".into(),
                real: "sk-ant-REAL".into(),
            }],
        };
        let captured = vec!["api.anthropic.com".to_owned()];
        assert!(c.allows(&captured, "api.anthropic.com"));
        assert!(c.allows(&captured, "registry.npmjs.org"));
        assert!(!c.allows(&captured, "127.0.0.1"));
        assert!(!c.allows(&captured, "evil.example"));
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("sk-ph-1"));
        h.insert("authorization", HeaderValue::from_static("Bearer sk-ph-1"));
        h.insert("user-agent", HeaderValue::from_static("claude"));
        assert_eq!(c.put_back(&mut h), 2);
        assert_eq!(h["x-api-key"], "sk-ant-REAL");
        assert_eq!(h["authorization"], "Bearer sk-ant-REAL");
        assert_eq!(h["user-agent"], "claude");
    }
}
