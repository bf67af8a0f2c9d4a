//! The manual's `config.toml` reference (`docs/src/reference/config.md`),
//! generated from the section types `config.rs` assembles.
//!
//! Test-only. Each key's description is its field's doc comment, read from
//! the type's source file; its TOML type comes from the Rust type; its
//! default is the one hand-kept fact ([`SECTIONS`]), and the tests check it
//! against the type: written into a file, the default must change nothing,
//! and an "unset" default must be an `Option` (or an empty collection). The
//! keys read from the source are checked against the ones serde accepts,
//! so a renamed, added or removed key fails until this page is regenerated.

use std::fmt::Write as _;
use std::path::Path;

use serde::de::{DeserializeOwned, Visitor};

/// The command that rewrites the generated page.
const UPDATE: &str = "HANGAR_UPDATE_DOCS=1 cargo test -p hangar-daemon --lib config_reference";

/// What a key is when config.toml does not name it.
#[derive(Clone, Copy, Debug)]
enum KeyDefault {
    /// This TOML value.
    Toml(&'static str),
    /// Not set; the text says what that means ("" when the doc says it).
    Unset(&'static str),
    /// Must be given.
    Required,
}
use KeyDefault::{Required, Toml, Unset};

/// One table of config.toml.
struct SectionDoc {
    /// As a person writes it: `[restore]`, `[hosts.NAME]`.
    title: &'static str,
    /// A concrete table header for the checks: `restore`, `hosts.x`.
    table: &'static str,
    /// What such a table needs to be valid (its required keys).
    base: &'static str,
    /// The type's source (from this file's folder) and its name.
    source: &'static str,
    type_name: &'static str,
    /// The keys serde accepts.
    fields: fn() -> Vec<&'static str>,
    defaults: &'static [(&'static str, KeyDefault)],
}

/// Every section, in the order config.rs names them.
const SECTIONS: &[SectionDoc] = &[
    SectionDoc {
        title: "[providers.NAME]",
        table: "providers.x",
        base: "",
        source: include_str!("../../hangar-providers/src/config.rs"),
        type_name: "ProviderConfig",
        fields: fields_of::<hangar_providers::ProviderConfig>,
        defaults: &[
            (
                "program",
                Unset("the provider's own: on PATH, or `HANGAR_<P>_BIN`"),
            ),
            ("args", Toml("[]")),
            ("resume_args", Toml("[]")),
            ("dangerous_args", Toml("[]")),
            ("env", Toml("{}")),
            ("auth_patterns", Unset("`[governor] auth_patterns`")),
            ("auth_exit_codes", Unset("`[governor] auth_exit_codes`")),
            ("sandbox", Toml("false")),
            ("package", Unset("the shipped file's, else none")),
            (
                "id",
                Unset("the shipped file's, else none: only a held id resumes"),
            ),
            ("fork_args", Unset("the shipped file's, else none: no fork")),
            ("state", Unset("the shipped file's, else none")),
            ("session_files", Unset("the shipped file's, else none")),
            ("activity", Unset("the shipped file's, else none")),
            ("limit_patterns", Unset("the shipped file's, else none")),
            ("mcp", Unset("the shipped file's, else none: no MCP server")),
            ("version", Unset("the shipped file's, else none")),
        ],
    },
    SectionDoc {
        title: "[restore]",
        table: "restore",
        base: "",
        source: include_str!("spawn/settings.rs"),
        type_name: "RestoreConfig",
        fields: fields_of::<crate::spawn::RestoreConfig>,
        defaults: &[
            ("concurrency", Toml("4")),
            ("spawn_timeout_secs", Toml("120")),
            ("settle_ms", Toml("300")),
        ],
    },
    SectionDoc {
        title: "[attach]",
        table: "attach",
        base: "",
        source: include_str!("server/settings.rs"),
        type_name: "AttachConfig",
        fields: fields_of::<crate::server::AttachConfig>,
        defaults: &[("detach_key", Toml("\"C-b d\""))],
    },
    SectionDoc {
        title: "[governor]",
        table: "governor",
        base: "",
        source: include_str!("governor/settings.rs"),
        type_name: "GovernorConfig",
        fields: fields_of::<crate::governor::GovernorConfig>,
        defaults: &[
            ("max_live", Unset("no limit")),
            ("max_memory_mb", Unset("no limit")),
            ("wake_concurrency", Toml("2")),
            ("wake_spacing_ms", Toml("500")),
            ("breaker_threshold", Toml("3")),
            (
                "auth_patterns",
                Unset("patterns that cover claude and codex"),
            ),
            ("auth_exit_codes", Toml("[]")),
            ("parked_ttl", Unset("never evicted")),
            ("check_interval_ms", Toml("2000")),
        ],
    },
    SectionDoc {
        title: "[worktree]",
        table: "worktree",
        base: "",
        source: include_str!("worktree.rs"),
        type_name: "WorktreeConfig",
        fields: fields_of::<crate::worktree::WorktreeConfig>,
        defaults: &[
            ("folder", Unset("`$HANGAR_HOME/worktrees`")),
            ("setup_command", Unset("none")),
            ("setup_timeout_secs", Toml("600")),
        ],
    },
    SectionDoc {
        title: "[proxy]",
        table: "proxy",
        base: "",
        source: include_str!("../../hangar-proxy/src/config.rs"),
        type_name: "ProxyConfig",
        fields: fields_of::<hangar_proxy::ProxyConfig>,
        defaults: &[
            ("enabled", Toml("true")),
            ("required", Toml("false")),
            ("port", Toml("0")),
            (
                "allow_hosts",
                Toml("[\"api.anthropic.com\", \"api.openai.com\"]"),
            ),
            ("extra_ca_file", Unset("none")),
            ("system_ca_bundle", Unset("found")),
            ("max_capture_bytes", Toml("16777216")),
            ("max_files", Toml("8")),
            ("max_body_bytes", Toml("1048576")),
        ],
    },
    SectionDoc {
        title: "[activity]",
        table: "activity",
        base: "",
        source: include_str!("activity/mod.rs"),
        type_name: "ActivityConfig",
        fields: fields_of::<crate::activity::ActivityConfig>,
        defaults: &[
            (
                "sources",
                Toml("[\"transcript\", \"proxy\", \"hooks\", \"screen\"]"),
            ),
            ("debounce_ms", Toml("1000")),
        ],
    },
    SectionDoc {
        title: "[notify]",
        table: "notify",
        base: "",
        source: include_str!("activity/notify.rs"),
        type_name: "NotifyConfig",
        fields: fields_of::<crate::activity::notify::NotifyConfig>,
        defaults: &[
            ("command", Unset("none")),
            ("osc", Toml("true")),
            ("desktop", Toml("true")),
            ("far_hosts", Toml("true")),
        ],
    },
    SectionDoc {
        title: "[mcp]",
        table: "mcp",
        base: "",
        source: include_str!("orchestration/mod.rs"),
        type_name: "McpConfig",
        fields: fields_of::<crate::orchestration::McpConfig>,
        defaults: &[
            ("enabled", Toml("true")),
            ("hibernate_idle_children", Toml("true")),
            ("tombstone_hours", Toml("24")),
        ],
    },
    SectionDoc {
        title: "[hosts.NAME]",
        table: "hosts.x",
        base: "ssh = \"me@build\"",
        source: include_str!("../../hangar-core/src/hosts.rs"),
        type_name: "HostConfig",
        fields: fields_of::<hangar_core::hosts::HostConfig>,
        defaults: &[
            ("ssh", Required),
            ("port", Unset("ssh's own")),
            ("identity_file", Unset("ssh's own")),
            ("hangar", Unset("`hangar` on the remote PATH")),
            ("home", Unset("the remote hangar's default")),
            ("connect_timeout_secs", Unset("10")),
        ],
    },
    SectionDoc {
        title: "[accounts.NAME]",
        table: "accounts.x",
        base: "provider = \"claude\"",
        source: include_str!("../../hangar-core/src/accounts.rs"),
        type_name: "AccountConfig",
        fields: fields_of::<hangar_core::accounts::AccountConfig>,
        defaults: &[
            ("provider", Required),
            ("env", Toml("{}")),
            ("folder", Unset("the folder the daemon's environment names")),
        ],
    },
    SectionDoc {
        title: "[terminal]",
        table: "terminal",
        base: "",
        source: include_str!("pty.rs"),
        type_name: "TerminalConfig",
        fields: fields_of::<crate::pty::TerminalConfig>,
        defaults: &[("history_bytes", Toml("4194304"))],
    },
    SectionDoc {
        title: "[usage]",
        table: "usage",
        base: "",
        source: include_str!("usage/mod.rs"),
        type_name: "UsageConfig",
        fields: fields_of::<crate::usage::UsageConfig>,
        defaults: &[
            ("watch_agents", Toml("false")),
            ("prices", Toml("{}")),
            ("max_cost_usd_per_day", Unset("no budget")),
        ],
    },
    SectionDoc {
        title: "[usage.prices.\"MODEL\"]",
        table: "usage.prices.x",
        base: "input = 1.0\noutput = 2.0\ncache_write = 3.0\ncache_read = 4.0",
        source: include_str!("../../hangar-core/src/usage.rs"),
        type_name: "Price",
        fields: fields_of::<hangar_core::usage::Price>,
        defaults: &[
            ("input", Required),
            ("output", Required),
            ("cache_write", Required),
            ("cache_read", Required),
            ("date", Unset("none")),
            ("source", Unset("none")),
        ],
    },
    SectionDoc {
        title: "[limits]",
        table: "limits",
        base: "",
        source: include_str!("usage/mod.rs"),
        type_name: "LimitsConfig",
        fields: fields_of::<crate::usage::LimitsConfig>,
        defaults: &[
            ("auto_continue", Toml("true")),
            ("continue_prompt", Toml("\"continue\"")),
            ("continue_delay_secs", Toml("60")),
            ("wake_to_continue", Toml("false")),
            ("continue_jitter_secs", Toml("30")),
            ("failover", Toml("false")),
        ],
    },
    SectionDoc {
        title: "[engines.NAME]",
        table: "engines.x",
        base: "kind = \"podman\"",
        source: include_str!("engines/config.rs"),
        type_name: "EngineConfig",
        fields: fields_of::<crate::engines::EngineConfig>,
        defaults: &[
            ("kind", Required),
            ("socket", Unset("Docker's or Podman's usual socket")),
            ("image", Unset("`hangar new --image` must name one")),
            ("runtime", Unset("the engine's default")),
            ("ulimits", Toml("{}")),
            ("network", Unset("`none`")),
            ("mounts", Toml("[]")),
            ("programs", Toml("{}")),
            ("home", Toml("\"/root\"")),
            ("stop_timeout_secs", Toml("5")),
            ("namespace", Unset("the context's, else `default`")),
            ("kubeconfig", Unset("as kubectl finds one")),
            ("context", Unset("the kubeconfig's current one")),
            ("storage", Toml("\"1Gi\"")),
            ("storage_class", Unset("the cluster's default")),
            ("image_pull_policy", Unset("`Never`")),
            ("start_timeout_secs", Toml("120")),
        ],
    },
    SectionDoc {
        title: "[sandbox]",
        table: "sandbox",
        base: "",
        source: include_str!("sandbox/mod.rs"),
        type_name: "SandboxConfig",
        fields: fields_of::<crate::sandbox::SandboxConfig>,
        defaults: &[
            ("enabled", Toml("false")),
            ("allow_hosts", Toml("[]")),
            ("read_only", Toml("[]")),
        ],
    },
];

/// One field as its source declares it.
#[derive(Debug)]
struct SourceField {
    name: String,
    rust_type: String,
    doc: String,
}

/// The doc comment of `type_name` and its fields, read from `source`.
fn read_struct(source: &str, type_name: &str) -> (String, Vec<SourceField>) {
    let lines: Vec<&str> = source.lines().collect();
    let header = format!("pub struct {type_name} {{");
    let start = lines
        .iter()
        .position(|l| l.trim() == header)
        .unwrap_or_else(|| panic!("`{header}` not found in its source file"));
    let mut type_doc = Vec::new();
    for line in lines[..start].iter().rev() {
        let line = line.trim();
        if let Some(doc) = line.strip_prefix("///") {
            type_doc.push(doc.trim());
        } else if !line.starts_with("#[") {
            break;
        }
    }
    type_doc.reverse();
    let mut fields = Vec::new();
    let mut doc = Vec::new();
    for line in &lines[start + 1..] {
        let line = line.trim();
        if line == "}" {
            break;
        }
        if let Some(text) = line.strip_prefix("///") {
            doc.push(text.trim().to_owned());
        } else if let Some(field) = line.strip_prefix("pub ") {
            let (name, rust_type) = field
                .split_once(':')
                .unwrap_or_else(|| panic!("cannot read the field `{line}` of {type_name}"));
            fields.push(SourceField {
                name: name.trim().to_owned(),
                rust_type: rust_type.trim().trim_end_matches(',').to_owned(),
                doc: doc.join(" "),
            });
            doc.clear();
        }
    }
    (type_doc.join(" "), fields)
}

/// The TOML a Rust field type takes.
fn toml_type(rust: &str) -> String {
    let inner = |prefix: &str| rust.strip_prefix(prefix)?.strip_suffix('>');
    if let Some(t) = inner("Option<") {
        return toml_type(t);
    }
    if let Some(t) = inner("Vec<") {
        return format!("array of {}", plural(&toml_type(t)));
    }
    if let Some(t) = inner("BTreeMap<String, ") {
        return format!("table of {}", plural(&toml_type(t)));
    }
    match rust {
        "bool" => "boolean",
        "u16" | "u32" | "u64" | "usize" | "i32" | "i64" => "integer",
        "f64" => "float",
        "String" | "PathBuf" => "string",
        "Source" => "string (`transcript`, `proxy`, `hooks`, `screen`)",
        "EngineKind" => "string (`docker`, `podman`, `kubernetes`)",
        "Price" => "table",
        // A CLI described in a file (hangar-providers' `described`): its
        // tables, each documented on docs/src/providers.md.
        "IdRule" => "table (`how` = `minted`, `found` or `listed`; see the providers page)",
        "StateFolder" => "table (`var`, `under_var`, `default`)",
        "SessionFiles" => "table (`glob`, `format`, and JSON pointers)",
        "Activity" => "table (`hooks`, `screen`)",
        "McpRule" => "table (`args`)",
        "VersionProbe" => "table (`args`, `pattern`, `tested`)",
        other => panic!("no TOML name for the Rust type `{other}`: add it to toml_type"),
    }
    .to_owned()
}

fn plural(t: &str) -> String {
    match t.split_once(' ') {
        Some((first, rest)) => format!("{first}s {rest}"),
        None => format!("{t}s"),
    }
}

/// The reference page as markdown.
fn markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from the config types (crates/hangar-daemon/src/config.rs and the\n     \
         section types it holds) by crates/hangar-daemon/src/config_reference.rs;\n     \
         do not edit. To update:\n     ",
    );
    let _ = writeln!(out, "{UPDATE} -->\n");
    out.push_str("# config.toml reference\n\n");
    out.push_str(
        "`$HANGAR_HOME/config.toml` (default `~/.local/state/hangar/config.toml`). A missing \
         file is every default below; a file that does not parse, or names a key that is not \
         here, is refused (the daemon does not start, and a reload keeps the settings in use). \
         See [Configuration](../configuration.md) for what a reload applies at once.\n\n",
    );
    for section in SECTIONS {
        let (type_doc, fields) = read_struct(section.source, section.type_name);
        let _ = writeln!(out, "## `{}`\n", section.title);
        // "`[restore]`." or "`[proxy]` in config.toml." says only the heading again.
        let bare = type_doc
            .trim_end_matches('.')
            .trim_end_matches(" in config.toml");
        let only_the_heading = bare.starts_with('`') && bare.ends_with('`');
        if !type_doc.is_empty() && !only_the_heading {
            let _ = writeln!(out, "{type_doc}\n");
        }
        out.push_str("| key | type | default | what it does |\n| --- | --- | --- | --- |\n");
        for field in fields {
            let default = match default_of(section, &field.name) {
                Toml(v) => format!("`{v}`"),
                Unset("") => "unset".to_owned(),
                Unset(means) => format!("unset: {means}"),
                Required => "required".to_owned(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                field.name,
                toml_type(&field.rust_type),
                cell(&default),
                cell(&field.doc),
            );
        }
        out.push('\n');
    }
    out
}

fn default_of(section: &SectionDoc, key: &str) -> KeyDefault {
    section
        .defaults
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, d)| *d)
        .unwrap_or_else(|| {
            panic!(
                "{} {key} has no default in config_reference.rs's SECTIONS: add one",
                section.title
            )
        })
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The field names serde accepts for `T` (its `deserialize_struct` list).
fn fields_of<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut names = Vec::new();
    let _ = T::deserialize(FieldNames(&mut names));
    names
}

/// A deserializer that only records the fields a struct asks for.
struct FieldNames<'a>(&'a mut Vec<&'static str>);

#[derive(Debug)]
struct Recorded;

impl std::fmt::Display for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names recorded")
    }
}

impl std::error::Error for Recorded {}

impl serde::de::Error for Recorded {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Recorded
    }
}

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = Recorded;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Recorded> {
        Err(Recorded)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Recorded> {
        self.0.extend_from_slice(fields);
        Err(Recorded)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The settings `text` makes, as `Debug` text (lib.rs reads the whole
/// settings; this module only compares two texts' effect).
fn parse(text: &str) -> Result<String, String> {
    crate::settings_of_config_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_reference_in_docs_is_the_one_the_types_describe() {
        let generated = markdown();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/reference/config.md");
        if std::env::var_os("HANGAR_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &generated).expect("writing docs/src/reference/config.md");
            return;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == generated,
            "docs/src/reference/config.md is stale: run `{UPDATE}` to update it"
        );
    }

    #[test]
    fn the_keys_read_from_the_source_are_the_keys_serde_accepts() {
        for section in SECTIONS {
            let (_, fields) = read_struct(section.source, section.type_name);
            let from_source: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            let accepted = (section.fields)();
            assert_eq!(from_source, accepted, "{}", section.title);
            let listed: Vec<&str> = section.defaults.iter().map(|(k, _)| *k).collect();
            assert_eq!(listed, accepted, "{}: SECTIONS' defaults", section.title);
            for field in &fields {
                assert!(
                    !field.doc.is_empty(),
                    "{} {} has no doc comment",
                    section.title,
                    field.name
                );
                toml_type(&field.rust_type);
            }
        }
    }

    #[test]
    fn every_documented_default_is_the_default_the_types_have() {
        for section in SECTIONS {
            let (_, fields) = read_struct(section.source, section.type_name);
            let table = |body: &str| format!("[{}]\n{}\n{}\n", section.table, section.base, body);
            let without = parse(&table("")).unwrap_or_else(|e| panic!("{}: {e}", section.title));
            for field in &fields {
                let key = &field.name;
                match default_of(section, key) {
                    Toml(value) => {
                        let with = parse(&table(&format!("{key} = {value}")))
                            .unwrap_or_else(|e| panic!("{} {key} = {value}: {e}", section.title));
                        assert_eq!(
                            with, without,
                            "{} {key}: the documented default {value} is not the type's",
                            section.title
                        );
                    }
                    Unset(_) => assert!(
                        field.rust_type.starts_with("Option<"),
                        "{} {key}: documented as unset but is a {}",
                        section.title,
                        field.rust_type
                    ),
                    Required => {
                        let body = section
                            .base
                            .lines()
                            .filter(|l| !l.starts_with(&format!("{key} ")))
                            .collect::<Vec<_>>()
                            .join("\n");
                        let text = format!("[{}]\n{body}\n", section.table);
                        assert!(
                            parse(&text).is_err(),
                            "{} {key}: documented as required but may be left out",
                            section.title
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_wrong_documented_default_is_caught() {
        let with = parse("[restore]\nconcurrency = 5\n").unwrap();
        let without = parse("[restore]\n").unwrap();
        assert_ne!(with, without);
    }
}
