//! `hangar import FORMAT [FILE] [--dry-run]`: read the file once, check it
//! here, then hand it to the running daemon (which restores it at once) or
//! write it to the store for the next start.
//!
//! Without FILE, an Agent Code import looks where Agent Code keeps its file
//! (`src/main/storage/paths.ts`: `~/.config/agent-code/workspace.json` on
//! every platform, `~/.config/cc-shell/workspace.json` before the
//! 2026-05-12 rename, and the `workspace.json.pre-v3-<ms>.bak` an upgrade to
//! the v3 format leaves) and asks which when there are several. The file is
//! read into memory once and never written: Agent Code may be running and
//! replaces it atomically (temp file + rename), so one read sees one whole
//! version of it.

use std::fs::File;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hangar_core::display;
use hangar_protocol::message as msg;

use serde_json::Value;

use crate::api;
use crate::conn::Target;

/// The largest file read. Agent Code's own file is kilobytes to a few
/// megabytes (one small record per session); a bigger one is not a
/// workspace, and reading it whole would only cost memory.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The largest import the daemon's control socket takes in one request
/// (`hangar_protocol::frame::MAX_CLIENT_FRAME`), less room for the envelope.
const MAX_SENT_BYTES: usize = hangar_protocol::frame::MAX_CLIENT_FRAME - 4096;

pub fn run(
    target: &Target,
    json: bool,
    format: String,
    file: Option<PathBuf>,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let file = match file {
        Some(f) => f,
        None if format == "agent-code" => find_agent_code_file()?,
        None => bail!("name the file to import: hangar import {format} FILE"),
    };
    let text = read_once(&file)?;
    // Checked here first: a bad file is refused before any daemon is asked,
    // with the path of the bad value.
    let report = hangar_daemon::transfer::parse_import(&format, &text)
        .map_err(|e| anyhow::anyhow!("{}: {}", display::path(&file), e.message))?;
    let imported = if dry_run {
        hangar_daemon::transfer::imported(&report, false)
    } else {
        match target.connect_existing()? {
            Some(mut c) => {
                // Compact: Agent Code writes its file indented, and the
                // socket takes at most MAX_SENT_BYTES in one request.
                let compact = serde_json::from_str::<Value>(&text)
                    .map(|v| v.to_string())
                    .unwrap_or(text);
                if compact.len() > MAX_SENT_BYTES {
                    bail!(
                        "{} is {} bytes once compacted, more than the running daemon takes in \
                         one request ({MAX_SENT_BYTES}); stop it (hangar shutdown) and import \
                         again: the import is then written to the store and restored at the \
                         next start. Nothing was imported",
                        display::path(&file),
                        compact.len()
                    );
                }
                api::import(
                    &mut c,
                    msg::Import {
                        format: format.clone(),
                        text: compact,
                    },
                )?
            }
            None => hangar_daemon::import_offline(&target.paths, &report)?,
        }
    };
    let report = crate::human::ImportReport {
        imported,
        file: file.display().to_string(),
        dry_run,
    };
    crate::human::print(json, &report, crate::human::import);
    Ok(ExitCode::SUCCESS)
}

/// Read a file whole, once, refusing a folder, a special file, a file too
/// big to be a workspace, and text that is not UTF-8.
pub fn read_once(path: &Path) -> anyhow::Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", display::path(path)))?;
    if meta.is_dir() {
        bail!(
            "{} is a folder, not a workspace file; name the workspace.json inside it. Nothing was \
             imported",
            display::path(path)
        );
    }
    if !meta.is_file() {
        bail!(
            "{} is not a regular file; nothing was imported",
            display::path(path)
        );
    }
    if meta.len() > MAX_FILE_BYTES {
        bail!(
            "{} is larger than {} MiB ({} bytes), far more than a workspace file holds; it is \
             not one. Nothing was imported",
            display::path(path),
            MAX_FILE_BYTES / (1024 * 1024),
            meta.len()
        );
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", display::path(path)))?;
    let mut bytes = Vec::new();
    // One bounded read: a file that grows while it is read cannot make this
    // take more than the limit.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", display::path(path)))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        bail!(
            "{} is larger than {} MiB, far more than a workspace file holds; it is not one. \
             Nothing was imported",
            display::path(path),
            MAX_FILE_BYTES / (1024 * 1024)
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{} is not UTF-8 text (invalid byte at offset {}); nothing was imported",
            display::path(path),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Where Agent Code keeps its workspace, newest layout first, for the home
/// folder `home`: every one of these that exists.
pub fn agent_code_candidates(home: &Path) -> Vec<PathBuf> {
    let config = home.join(".config");
    let current = config.join("agent-code").join("workspace.json");
    let mut found = Vec::new();
    if current.is_file() {
        found.push(current);
    }
    let mut backups: Vec<(u64, PathBuf)> = std::fs::read_dir(config.join("agent-code"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let ms = name
                .strip_prefix("workspace.json.pre-v3-")?
                .strip_suffix(".bak")?
                .parse::<u64>()
                .ok()?;
            entry.path().is_file().then(|| (ms, entry.path()))
        })
        .collect();
    backups.sort_by_key(|b| std::cmp::Reverse(b.0));
    found.extend(backups.into_iter().map(|(_, p)| p));
    let old = config.join("cc-shell").join("workspace.json");
    if old.is_file() {
        found.push(old);
    }
    found
}

fn find_agent_code_file() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set, so Agent Code's file cannot be found; name it: hangar import agent-code FILE")?;
    let found = agent_code_candidates(&home);
    match found.len() {
        0 => bail!(
            "no Agent Code workspace was found (looked for {}, its .pre-v3-*.bak backups and {}); \
             name the file: hangar import agent-code FILE",
            display::path(&home.join(".config/agent-code/workspace.json")),
            display::path(&home.join(".config/cc-shell/workspace.json"))
        ),
        1 => Ok(found.into_iter().next().unwrap_or_default()),
        _ if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() => ask(&found),
        _ => bail!(
            "several Agent Code workspace files were found; name the one to import \
             (hangar import agent-code FILE):\n{}",
            listing(&found)
        ),
    }
}

fn listing(found: &[PathBuf]) -> String {
    found
        .iter()
        .enumerate()
        .map(|(n, p)| format!("  {}. {}{}", n + 1, display::path(p), describe(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// " (current)", " (backup before the v3 upgrade)"... with its size.
fn describe(p: &Path) -> String {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let what = if name.ends_with(".bak") {
        "the copy kept before the upgrade to the v3 format"
    } else if p.components().any(|c| c.as_os_str() == "cc-shell") {
        "cc-shell, before the 2026-05-12 rename"
    } else {
        "current"
    };
    let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    format!(" ({what}, {size} bytes)")
}

fn ask(found: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let mut err = std::io::stderr();
    writeln!(
        err,
        "Several Agent Code workspace files were found:\n{}",
        listing(found)
    )?;
    let stdin = std::io::stdin();
    loop {
        write!(err, "Import which one? [1-{}, q to quit] ", found.len())?;
        err.flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            bail!("no file chosen; nothing was imported");
        }
        let answer = line.trim();
        if answer.eq_ignore_ascii_case("q") {
            bail!("no file chosen; nothing was imported");
        }
        if let Some(path) = answer
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| found.get(i))
        {
            return Ok(path.clone());
        }
        writeln!(err, "answer with a number from 1 to {}", found.len())?;
    }
}
