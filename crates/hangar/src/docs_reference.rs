//! The manual's generated pages, the CLI reference (`docs/src/reference/cli.md`,
//! from clap's command tree) and the TUI's keys (`docs/src/reference/keys.md`,
//! from the help overlay's own table), and the manual's link check.
//!
//! Test-only: `cargo test --workspace` regenerates the page and fails when
//! the file in the repository differs, so a flag added without updating the
//! manual is caught in CI without installing mdbook. Hidden commands and
//! arguments (the daemon's own re-executions) stay out of the manual.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The command that rewrites the generated pages.
const UPDATE: &str = "HANGAR_UPDATE_DOCS=1 cargo test -p hangar --bin hangar docs_reference";

/// The CLI reference as markdown.
pub fn cli_markdown() -> String {
    let mut root = crate::command_tree();
    root.build();
    let mut out = String::from(
        "<!-- Generated from the clap command tree (crates/hangar/src/cli.rs) by\n     \
         crates/hangar/src/docs_reference.rs; do not edit. To update:\n     ",
    );
    let _ = writeln!(out, "{UPDATE} -->\n");
    out.push_str("# CLI reference\n\n");
    out.push_str(
        "Every command of `hangar`, as `hangar COMMAND --help` describes it. \
         Session ids may be given as any unique prefix; tabs by id, id prefix or exact title.\n\n",
    );
    out.push_str("Options every command takes:\n\n");
    arguments_table(&root, true, &mut out);
    render(&root, "hangar", &mut out);
    out
}

/// The TUI's keys as markdown: the table the `?` overlay shows.
pub fn keys_markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from the TUI's help table (crates/hangar/src/tui/help.rs) by\n     \
         crates/hangar/src/docs_reference.rs; do not edit. To update:\n     ",
    );
    let _ = writeln!(out, "{UPDATE} -->\n");
    out.push_str("# TUI keys\n\n");
    out.push_str(
        "What `?` shows in the TUI. The keys act after the prefix, `Ctrl-b`, while you type \
         into a pane, and directly otherwise; the rows that say \"in copy mode\" are its keys. See \
         [The terminal UI](../tui.md).\n\n",
    );
    out.push_str("| keys | what they do |\n| --- | --- |\n");
    for (keys, what) in crate::tui::help::KEYS {
        // The overlay indents the keys of copy mode under the key that enters it.
        let what = if keys.starts_with(' ') {
            format!("in copy mode: {what}")
        } else {
            (*what).to_owned()
        };
        let keys = keys.trim();
        let shown = if keys.contains('`') {
            keys.to_owned()
        } else {
            format!("`{keys}`")
        };
        let _ = writeln!(out, "| {} | {} |", cell(&shown), cell(&what));
    }
    out
}

fn render(cmd: &clap::Command, path: &str, out: &mut String) {
    let _ = writeln!(out, "## `{path}`\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", about.to_string().trim());
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    arguments_table(cmd, false, out);
    let subcommands: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    if !subcommands.is_empty() && path != "hangar" {
        out.push_str("Subcommands: ");
        let names: Vec<String> = subcommands
            .iter()
            .map(|s| format!("`{}`", s.get_name()))
            .collect();
        let _ = writeln!(out, "{}.\n", names.join(", "));
    }
    for sub in subcommands {
        render(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// The arguments of `cmd`: the global ones (`globals`) or its own.
fn arguments_table(cmd: &clap::Command, globals: bool, out: &mut String) {
    let rows: Vec<String> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .filter(|a| a.is_global_set() == globals)
        .map(argument_row)
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("| argument | what it does |\n| --- | --- |\n");
    for row in rows {
        out.push_str(&row);
    }
    out.push('\n');
}

fn argument_row(arg: &clap::Arg) -> String {
    let value_names: Vec<String> = arg
        .get_value_names()
        .map(|names| names.iter().map(|n| n.to_string()).collect())
        .unwrap_or_else(|| vec![arg.get_id().as_str().to_uppercase()]);
    // One name taking many values (`<IDS>...`), as clap's usage writes it.
    let repeated = value_names.len() == 1 && arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let values = |open: &str, close: &str| {
        let mut text = value_names
            .iter()
            .map(|n| format!("{open}{n}{close}"))
            .collect::<Vec<_>>()
            .join(" ");
        if repeated {
            text.push_str("...");
        }
        text
    };
    let name = if arg.is_positional() {
        if arg.is_required_set() {
            values("<", ">")
        } else {
            values("[", "]")
        }
    } else {
        let mut flags = Vec::new();
        if let Some(short) = arg.get_short() {
            flags.push(format!("-{short}"));
        }
        if let Some(long) = arg.get_long() {
            flags.push(format!("--{long}"));
        }
        let mut name = flags.join(", ");
        if arg.get_action().takes_values() {
            let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
            let _ = write!(
                name,
                " {}",
                if optional {
                    values("[", "]")
                } else {
                    values("<", ">")
                }
            );
        }
        name
    };
    let mut what = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| one_line(&h.to_string()))
        .unwrap_or_default();
    let mut notes = Vec::new();
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    // A boolean flag's "true"/"false" says nothing a reader needs.
    if !possible.is_empty() && arg.get_action().takes_values() {
        notes.push(format!("one of {}", possible.join(", ")));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && arg.get_action().takes_values() {
        notes.push(format!("default {}", defaults.join(" ")));
    }
    if let Some(env) = arg.get_env() {
        notes.push(format!("env `{}`", env.to_string_lossy()));
    }
    if !notes.is_empty() {
        if !what.is_empty() {
            what.push(' ');
        }
        let _ = write!(what, "({})", notes.join("; "));
    }
    format!("| `{}` | {} |\n", name, cell(&what))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table cell: a `|` would end it.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The repository's root (this crate is `crates/hangar`).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compares `generated` with the file at `relative`, or writes it with
/// `HANGAR_UPDATE_DOCS=1`.
fn check_generated(relative: &str, generated: &str) {
    let path = repository().join(relative);
    if std::env::var_os("HANGAR_UPDATE_DOCS").is_some() {
        std::fs::write(&path, generated).unwrap_or_else(|e| panic!("writing {relative}: {e}"));
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current != generated {
        let line = current
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
        panic!(
            "{relative} is stale (first difference at line {}): run `{UPDATE}` to update it",
            line + 1
        );
    }
}

/// Every markdown file of the manual and the repository's top-level pages.
fn manual_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "book") {
                    walk(&path, found);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let root = repository();
    let mut found = Vec::new();
    walk(&root.join("docs"), &mut found);
    for top in ["README.md", "BENCHMARKS.md"] {
        found.push(root.join(top));
    }
    found.sort();
    found
}

/// The relative targets of `](...)` links in `text` (no scheme, no pure
/// `#anchor`), without their `#anchor`.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            let file = target.split('#').next().unwrap_or("");
            if !file.is_empty() && !file.contains("://") && !file.starts_with("mailto:") {
                links.push(file.to_owned());
            }
            rest = &rest[end..];
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_reference_in_docs_is_the_one_clap_describes() {
        check_generated("docs/src/reference/cli.md", &cli_markdown());
    }

    #[test]
    fn the_key_reference_in_docs_is_the_tuis_help_table() {
        check_generated("docs/src/reference/keys.md", &keys_markdown());
    }

    #[test]
    fn the_cli_reference_names_every_visible_command_and_no_hidden_one() {
        let page = cli_markdown();
        for visible in [
            "## `hangar new`",
            "## `hangar tab new`",
            "`--provider <PROVIDER>`",
        ] {
            assert!(page.contains(visible), "missing {visible}");
        }
        let root = crate::command_tree();
        for hidden in root.get_subcommands().filter(|s| s.is_hide_set()) {
            let heading = format!("## `hangar {}`", hidden.get_name());
            assert!(!page.contains(&heading), "hidden command shown: {heading}");
        }
    }

    #[test]
    fn every_relative_link_of_the_manual_and_readme_resolves() {
        if std::env::var_os("HANGAR_UPDATE_DOCS").is_some() {
            // The other tests are writing the generated pages at this moment.
            return;
        }
        let mut broken = Vec::new();
        let files = manual_files();
        assert!(
            files.len() > 10,
            "the manual's pages were not found: {files:?}"
        );
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let dir = file.parent().unwrap_or(Path::new("."));
            for link in relative_links(&text) {
                if !dir.join(&link).is_file() {
                    let shown = file.strip_prefix(repository()).unwrap_or(&file);
                    broken.push(format!("{}: {link}", shown.display()));
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links to no file:\n{}",
            broken.join("\n")
        );
    }

    #[test]
    fn every_page_of_the_manual_is_in_its_summary() {
        let src = repository().join("docs/src");
        let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap_or_default();
        let listed = relative_links(&summary);
        let missing: Vec<String> = manual_files()
            .into_iter()
            .filter_map(|file| {
                let page = file.strip_prefix(&src).ok()?.to_str()?.to_owned();
                (page != "SUMMARY.md" && !listed.contains(&page)).then_some(page)
            })
            .collect();
        assert!(
            missing.is_empty(),
            "pages not in docs/src/SUMMARY.md: {missing:?}"
        );
    }

    #[test]
    fn a_link_checker_reads_links_outside_code_and_skips_web_addresses() {
        let text = "see [a](a.md#x) and [b](https://e.org/b.md) [c](../c.rs) [e](#top)\n```\n[d](d.md)\n```\n";
        assert_eq!(relative_links(text), vec!["a.md", "../c.rs"]);
    }
}
