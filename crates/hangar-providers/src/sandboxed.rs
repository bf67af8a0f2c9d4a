//! What a sandboxed CLI's own state folder is given of the person's own
//! settings (issue 32). A sandbox starts each CLI with a state folder of its
//! own (`hangar_core::sandbox::state_binds`), where nothing of the person's
//! is: so the CLI would stop at its first-run questions, know no model
//! provider, and trust no folder. hangar copies in, at each start, what the
//! CLI needs to run as the person set it up, and never a credential:
//!
//! - claude (`$CLAUDE_CONFIG_DIR/.claude.json`, read by Claude Code 2.1.197
//!   from `CLAUDE_CONFIG_DIR`, else the home; its `.config.json` first when
//!   there is one): whether onboarding was done and the theme; the trust the
//!   person gave this folder or a folder above it (claude walks up the same
//!   way); and the approval of the API key (claude keeps the last 20
//!   characters of each approved key) moved to the placeholder the sandbox
//!   holds, when the person approved the real key. Nothing else of that file
//!   (OAuth account, `primaryApiKey`, MCP servers, other projects).
//! - codex (`$CODEX_HOME/config.toml`) and OpenCode (`opencode.json`): the
//!   whole settings file, with every value whose name says it is a secret
//!   (`api_key`, `apiKey`, `token`, `bearer_token`, `password`, ...)
//!   replaced by a placeholder the proxy puts back; codex's `env_key` (the
//!   name of the variable holding a provider's key) is kept, and that
//!   variable becomes a placeholder too.
//!
//! Credentials files (`.credentials.json`, codex's `auth.json`) are never
//! read here.

use std::path::{Path, PathBuf};

use hangar_core::sandbox::StateBind;
use serde_json::{Value, json};

/// A secret found in a settings file and the placeholder written instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replaced {
    pub placeholder: String,
    pub real: String,
}

/// What a CLI's adapter seeds a sandboxed session's state folders from
/// (`Adapter::sandbox_settings`, `Adapter::sandbox_trust`).
pub struct SeedFrom<'a> {
    /// The session's state folders (`hangar_core::sandbox::state_binds`).
    pub state: &'a [StateBind],
    /// The session's folder, as the CLI sees it.
    pub cwd: &'a str,
    /// A variable of the person's environment (the daemon's), `None` when
    /// unset or empty: where the person's own settings are.
    pub var: &'a dyn Fn(&str) -> Option<PathBuf>,
}

impl SeedFrom<'_> {
    /// The state folder (outside the sandbox) that `var` points the CLI to.
    pub fn state_dir(&self, var: &str) -> Option<PathBuf> {
        self.state
            .iter()
            .find(|s| s.var == var)
            .map(|s| PathBuf::from(&s.outside))
    }

    /// The person's settings file of a CLI: `file` in the folder `var`
    /// names, else in `$HOME/home_rest`.
    pub fn person_file(&self, var: &str, home_rest: &str, file: &str) -> Option<PathBuf> {
        let dir = (self.var)(var).or_else(|| (self.var)("HOME").map(|h| h.join(home_rest)))?;
        Some(dir.join(file))
    }
}

/// What the adapter seeds: the files to write (privately) into the
/// session's state folders, the secrets they hold as placeholders, and
/// the variables the settings name as holding a key (codex's `env_key`),
/// which the sandbox's environment then gives as placeholders too.
#[derive(Debug, Default)]
pub struct Seeded {
    pub files: Vec<(PathBuf, Vec<u8>)>,
    pub replaced: Vec<Replaced>,
    pub key_vars: Vec<String>,
}

/// A settings file's text; `None` when there is none.
pub fn read_settings(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// A JSON file's document; `Null` when it is missing or is no JSON.
pub fn json_file(path: &Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// The last 20 characters of an API key: what Claude Code keeps of an
/// approved key (`customApiKeyResponses.approved`).
pub fn claude_key_tail(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    chars[chars.len().saturating_sub(20)..].iter().collect()
}

/// The `.claude.json` of a sandboxed claude: `inside` (what claude wrote
/// there itself, kept) with the person's onboarding, theme, this folder's
/// trust and the key's approval from `person`. `key` is the real API key
/// and the placeholder the sandbox holds.
pub fn claude_json(inside: Value, person: &Value, cwd: &str, key: Option<(&str, &str)>) -> Value {
    let mut doc = if inside.is_object() {
        inside
    } else {
        json!({})
    };
    for field in ["hasCompletedOnboarding", "lastOnboardingVersion", "theme"] {
        if let Some(v) = person.get(field).filter(|v| !v.is_null()) {
            doc[field] = v.clone();
        }
    }
    // Claude counts a folder trusted when it or a folder above it is.
    let trusted = {
        let mut dir = Some(std::path::Path::new(cwd));
        let mut found = false;
        while let Some(d) = dir {
            let key = d.display().to_string();
            if person["projects"][&key]["hasTrustDialogAccepted"] == json!(true) {
                found = true;
                break;
            }
            dir = d.parent();
        }
        found
    };
    if trusted {
        if !doc["projects"].is_object() {
            doc["projects"] = json!({});
        }
        if !doc["projects"][cwd].is_object() {
            doc["projects"][cwd] = json!({});
        }
        doc["projects"][cwd]["hasTrustDialogAccepted"] = json!(true);
    }
    if let Some((real, placeholder)) = key {
        let listed = |list: &str, k: &str| {
            person["customApiKeyResponses"][list]
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v == k))
        };
        if listed("approved", &claude_key_tail(real)) {
            if !doc["customApiKeyResponses"].is_object() {
                doc["customApiKeyResponses"] = json!({"approved": [], "rejected": []});
            }
            let tail = json!(claude_key_tail(placeholder));
            let approved = &mut doc["customApiKeyResponses"]["approved"];
            if !approved.is_array() {
                *approved = json!([]);
            }
            if let Some(a) = approved.as_array_mut()
                && !a.contains(&tail)
            {
                a.push(tail);
            }
        }
    }
    doc
}

/// Whether a settings key names a secret value (not the name of a
/// variable holding one, as codex's `env_key`).
fn secret_key(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // Names of variables, not values: `env_key`, `env_http_headers`,
    // `bearer_token_env_var`, `env_key_instructions`.
    if lower.starts_with("env_")
        || lower.ends_with("_env")
        || lower.ends_with("_var")
        || lower.ends_with("_instructions")
    {
        return false;
    }
    let squashed: String = lower
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    [
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "cookie",
    ]
    .iter()
    .any(|p| squashed.contains(p))
        || squashed.ends_with("key")
        || squashed == "authorization"
}

/// A value that names where a secret is rather than holding it
/// (OpenCode's `{env:VAR}` and `{file:PATH}`): left as it is.
fn is_reference(v: &str) -> bool {
    v.starts_with("{env:") || v.starts_with("{file:")
}

/// Replace every secret string in a JSON settings document by a
/// placeholder (`mint` makes one per secret).
pub fn json_without_secrets(doc: &mut Value, mint: &mut dyn FnMut() -> String) -> Vec<Replaced> {
    let mut out = Vec::new();
    walk_json(doc, false, mint, &mut out);
    out
}

fn walk_json(
    v: &mut Value,
    secret: bool,
    mint: &mut dyn FnMut() -> String,
    out: &mut Vec<Replaced>,
) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                walk_json(child, secret || secret_key(k), mint, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                walk_json(child, secret, mint, out);
            }
        }
        Value::String(s) if secret && !s.is_empty() && !is_reference(s) => {
            let placeholder = mint();
            out.push(Replaced {
                placeholder: placeholder.clone(),
                real: std::mem::replace(s, placeholder),
            });
        }
        _ => {}
    }
}

/// A sandboxed codex's `config.toml`: the person's (`person`), with its
/// secrets replaced by placeholders, and the `[projects]` trust codex wrote
/// inside (`inside`) kept. Returns the file, the replaced secrets and the
/// variables its model providers read their keys from (`env_key`).
pub fn codex_config(
    person: &str,
    inside: Option<&str>,
    mint: &mut dyn FnMut() -> String,
) -> Result<(String, Vec<Replaced>, Vec<String>), String> {
    let mut doc: toml::Table = person
        .parse()
        .map_err(|e| format!("cannot read codex's config.toml: {e}"))?;
    let mut replaced = Vec::new();
    for (k, v) in doc.iter_mut() {
        walk_toml(v, secret_key(k), mint, &mut replaced);
    }
    let mut key_vars: Vec<String> = Vec::new();
    if let Some(providers) = doc.get("model_providers").and_then(|p| p.as_table()) {
        for p in providers.values() {
            if let Some(var) = p.get("env_key").and_then(|v| v.as_str())
                && !key_vars.iter().any(|k| k == var)
            {
                key_vars.push(var.to_owned());
            }
        }
    }
    if let Some(own) = inside
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| t.get("projects").and_then(|p| p.as_table()).cloned())
    {
        let projects = doc
            .entry("projects")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(table) = projects.as_table_mut() {
            for (dir, entry) in own {
                table.entry(dir).or_insert(entry);
            }
        }
    }
    let text = toml::to_string(&doc).map_err(|e| format!("cannot write codex's config: {e}"))?;
    Ok((text, replaced, key_vars))
}

fn walk_toml(
    v: &mut toml::Value,
    secret: bool,
    mint: &mut dyn FnMut() -> String,
    out: &mut Vec<Replaced>,
) {
    match v {
        toml::Value::Table(t) => {
            for (k, child) in t.iter_mut() {
                walk_toml(child, secret || secret_key(k), mint, out);
            }
        }
        toml::Value::Array(items) => {
            for child in items {
                walk_toml(child, secret, mint, out);
            }
        }
        toml::Value::String(s) if secret && !s.is_empty() => {
            let placeholder = mint();
            out.push(Replaced {
                placeholder: placeholder.clone(),
                real: std::mem::replace(s, placeholder),
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minter() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("ph-{n}")
        }
    }

    #[test]
    fn claude_gets_onboarding_trust_and_the_keys_approval_but_nothing_else() {
        let real = "sk-ant-api03-REAL-0123456789abcdefghij";
        let placeholder = "sk-ant-api03-hangar-sandbox-x-00000000000000000000abcd";
        let person = json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "primaryApiKey": "sk-ant-SAVED",
            "oauthAccount": {"emailAddress": "ann@example.com"},
            "mcpServers": {"x": {"env": {"TOKEN": "t"}}},
            "customApiKeyResponses": {"approved": [claude_key_tail(real)], "rejected": []},
            "projects": {"/w": {"hasTrustDialogAccepted": true}, "/other": {"x": 1}}
        });
        let inside = json!({"numStartups": 3, "projects": {"/w/proj": {"history": [1]}}});
        let doc = claude_json(inside, &person, "/w/proj", Some((real, placeholder)));
        assert_eq!(doc["hasCompletedOnboarding"], true);
        assert_eq!(doc["theme"], "dark");
        assert_eq!(doc["numStartups"], 3, "claude's own fields are kept");
        assert_eq!(doc["projects"]["/w/proj"]["hasTrustDialogAccepted"], true);
        assert_eq!(doc["projects"]["/w/proj"]["history"], json!([1]));
        assert_eq!(
            doc["customApiKeyResponses"]["approved"],
            json!([claude_key_tail(placeholder)])
        );
        let text = doc.to_string();
        for absent in ["SAVED", "ann@example.com", "mcpServers", "/other", "REAL"] {
            assert!(!text.contains(absent), "{absent} in {text}");
        }
        // A key the person never approved is not approved inside either,
        // and an untrusted folder stays untrusted.
        let person = json!({"hasCompletedOnboarding": true, "projects": {"/x": {"hasTrustDialogAccepted": true}}});
        let doc = claude_json(Value::Null, &person, "/w/proj", Some((real, placeholder)));
        assert!(doc["customApiKeyResponses"].is_null(), "{doc}");
        assert!(doc["projects"].is_null(), "{doc}");
    }

    #[test]
    fn settings_files_lose_their_secrets_to_placeholders_but_keep_variable_names() {
        let person = r#"
model = "m"
model_provider = "fake"
experimental_bearer_token = "tok-1"

[model_providers.fake]
base_url = "https://api.example/v1"
env_key = "MY_KEY_VAR"
http_headers = { "X-Api-Key" = "hdr-secret" }

[mcp_servers.gh]
bearer_token_env_var = "GH_TOKEN_VAR"

[mcp_servers.gh.env]
GITHUB_TOKEN = "ghp-1"

[projects."/w"]
trust_level = "trusted"
"#;
        let inside = "[projects.\"/w/sub\"]\ntrust_level = \"trusted\"\n";
        let (text, replaced, vars) = codex_config(person, Some(inside), &mut minter()).unwrap();
        assert_eq!(vars, vec!["MY_KEY_VAR"]);
        let reals: Vec<&str> = replaced.iter().map(|r| r.real.as_str()).collect();
        for secret in ["tok-1", "hdr-secret", "ghp-1"] {
            assert!(reals.contains(&secret), "{secret} not replaced: {reals:?}");
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        let doc: toml::Table = text.parse().unwrap();
        assert_eq!(
            doc["model_providers"]["fake"]["env_key"].as_str(),
            Some("MY_KEY_VAR")
        );
        assert_eq!(doc["model_provider"].as_str(), Some("fake"));
        assert_eq!(
            doc["mcp_servers"]["gh"]["bearer_token_env_var"].as_str(),
            Some("GH_TOKEN_VAR")
        );
        assert!(doc["projects"].get("/w").is_some() && doc["projects"].get("/w/sub").is_some());

        let mut oc = json!({"provider": {"fake": {"options": {"baseURL": "u", "apiKey": "sk-oc"}},
                                         "env": {"options": {"apiKey": "{env:OPENAI_API_KEY}"}}},
                            "model": "fake/m"});
        let replaced = json_without_secrets(&mut oc, &mut minter());
        assert_eq!(replaced.len(), 1);
        assert_eq!(replaced[0].real, "sk-oc");
        assert_eq!(
            oc["provider"]["fake"]["options"]["apiKey"],
            replaced[0].placeholder.as_str()
        );
        assert_eq!(
            oc["provider"]["env"]["options"]["apiKey"],
            "{env:OPENAI_API_KEY}"
        );
        assert_eq!(oc["provider"]["fake"]["options"]["baseURL"], "u");
    }
}
