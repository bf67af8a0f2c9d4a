//! Real-CLI conformance, issue 47 part 2: account failover with the real
//! claude and codex against the fake model API, two accounts by config
//! folder, each with its own key; the fake refuses one key at a usage limit
//! (a script rule with `key`, as the provider refuses one account) and
//! answers the other.
//!
//! What is real here: where each CLI keeps its login and conversations
//! (Claude Code's `CLAUDE_CONFIG_DIR` with `.claude.json` and
//! `projects/<slug>/ID.jsonl`, Codex's `CODEX_HOME` with `config.toml` and
//! `sessions/.../rollout-...-ID.jsonl`; docs/src/cli-facts.md), how each
//! answers a refusal, and whether `--resume ID` / `codex resume ID` finds
//! the conversation in the other folder once hangar carried it there.
//!
//! Skipped with one line when the CLIs cannot be installed (fails under CI).

use std::fs;
use std::path::Path;

use crate::real_cli_support;
use crate::support;

use real_cli_support::{OPENAI_KEY_VAR, REAL_DEADLINE, RealCli};
use serde_json::{Value, json};

/// The two accounts' keys: their last 20 characters differ, which is what
/// Claude Code's `customApiKeyResponses` approves a key by.
const KEY_LIMITED: &str = "sk-ant-api03-hangar-account-one-0123456789-LIMITED-ONE";
const KEY_FREE: &str = "sk-ant-api03-hangar-account-two-0123456789-FREE-ANSWERS";

/// config.toml: two accounts of `provider`, `one` (limited) and `two`,
/// each with its folder and key (`key_var`), failover on.
fn accounts_config(rc: &RealCli, provider: &str, one: &Path, two: &Path, key_var: &str) -> String {
    format!(
        "[proxy]\nallow_hosts = [\"127.0.0.2\"]\nextra_ca_file = {ca:?}\n\
         [usage]\nwatch_agents = true\n\
         [limits]\nfailover = true\ncontinue_delay_secs = 1\ncontinue_jitter_secs = 0\n\
         [accounts.one]\nprovider = \"{provider}\"\nfolder = {one:?}\nenv = {{ {key_var} = \"{KEY_LIMITED}\" }}\n\
         [accounts.two]\nprovider = \"{provider}\"\nfolder = {two:?}\nenv = {{ {key_var} = \"{KEY_FREE}\" }}\n",
        ca = rc.api.ca_file().display().to_string(),
        one = one.display().to_string(),
        two = two.display().to_string(),
    )
}

/// A claude config folder as a person who logged in with `key` has it:
/// the harness's `.claude.json` (onboarding done, the work folder trusted)
/// with `key` approved.
fn claude_account_folder(rc: &RealCli, name: &str, key: &str) -> std::path::PathBuf {
    let dir = rc.hangar.root.join(name);
    fs::create_dir_all(&dir).expect("account folder");
    let mut doc: Value =
        serde_json::from_slice(&fs::read(rc.hangar.claude_dir.join(".claude.json")).unwrap())
            .unwrap();
    let tail: String = {
        let chars: Vec<char> = key.chars().collect();
        chars[chars.len() - 20..].iter().collect()
    };
    doc["customApiKeyResponses"] = json!({"approved": [tail], "rejected": []});
    fs::write(
        dir.join(".claude.json"),
        serde_json::to_vec_pretty(&doc).unwrap(),
    )
    .unwrap();
    dir
}

/// A codex home as the harness writes its own (the fake provider, the
/// work folder trusted), its key read from `key_var`.
fn codex_account_folder(rc: &RealCli, name: &str, key_var: &str) -> std::path::PathBuf {
    let dir = rc.hangar.root.join(name);
    fs::create_dir_all(&dir).expect("account folder");
    let own = fs::read_to_string(rc.hangar.codex_home.join("config.toml")).unwrap();
    let text = own.replace(
        &format!("env_key = \"{OPENAI_KEY_VAR}\""),
        &format!("env_key = \"{key_var}\""),
    );
    assert_ne!(
        text, own,
        "the harness's codex config names its key variable"
    );
    fs::write(dir.join("config.toml"), text).unwrap();
    dir
}

/// Every file under `dir` whose name contains `psid`.
fn files_naming(dir: &Path, psid: &str) -> Vec<std::path::PathBuf> {
    support::files_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(psid))
        })
        .collect()
}

/// The credential a recorded request was sent with.
fn key_of(r: &Value) -> String {
    let h = &r["headers"];
    h["x-api-key"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            h["authorization"]
                .as_str()
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// The session moved to account `two` by itself (journal `account-move`),
/// still on conversation `psid`, and the model answered its continuation
/// under `two`'s key in a request that carries the turn before the limit.
fn carried_on_under_two(rc: &RealCli, id: &str, psid: &str, api: &str, refused: u64) {
    support::wait_until(
        "hangar moves the session to account two",
        REAL_DEADLINE,
        || {
            rc.hangar
                .journal()
                .iter()
                .any(|e| e["event"] == "account-move" && e["session"] == id && e["to"] == "two")
        },
    );
    let row = rc.hangar.session(id);
    assert_eq!(row["account"], "two", "{row}");
    assert_eq!(rc.hangar.provider_id(id).0.as_deref(), Some(psid), "{row}");
    let answered = rc
        .api
        .wait_request("the continuation answered under two", |r| {
            r["api"] == api
                && r["n"].as_u64() > Some(refused)
                && r["reply"]["text"].is_string()
                && r["body"].to_string().contains("continue")
        });
    assert_eq!(key_of(&answered), KEY_FREE, "{answered}");
    assert!(
        answered["body"].to_string().contains("before the limit"),
        "the same conversation goes on: {}",
        answered["body"]
    );
    let text = answered["reply"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    rc.wait_screen(id, &text);
    let exported: Value = serde_json::from_str(&rc.hangar.ok(&["export"])).expect("JSON");
    let history = &exported["workspace"]["sessions"][id]["provider_id_history"];
    let moved = history
        .as_array()
        .and_then(|h| h.iter().find(|c| !c["account_move"].is_null()))
        .unwrap_or_else(|| panic!("the ledger records the move: {history}"));
    assert_eq!(moved["to"], psid, "{moved}");
    assert_eq!(
        moved["account_move"],
        json!({"from": "one", "to": "two"}),
        "{moved}"
    );
    let ls = rc.hangar.ok(&["ls", "--json"]);
    for key in [KEY_LIMITED, KEY_FREE] {
        assert!(!ls.contains(key), "no credential in ls");
    }
}

#[test]
fn a_limited_claude_account_fails_over_to_the_other_folder_with_the_same_conversation() {
    let Some(mut rc) = RealCli::start() else {
        return;
    };
    let one = claude_account_folder(&rc, "claude-one", KEY_LIMITED);
    let two = claude_account_folder(&rc, "claude-two", KEY_FREE);
    rc.hangar_config(&accounts_config(
        &rc,
        "claude",
        &one,
        &two,
        "ANTHROPIC_API_KEY",
    ));
    // Through the proxy (the API's HTTPS side): the refusal's headers are
    // the limit's source, as for claude on its own login.
    rc.hangar.set_env("ANTHROPIC_BASE_URL", rc.api.https_url());
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "claude", "--account", "one"]);
    rc.wait_ready(&id);
    // `RealCli::ask` waits for the answer in the harness's own claude
    // folder; this conversation is under account one's.
    rc.submit(&id, "before the limit");
    rc.wait_screen(&id, "ANSWER(before the limit)");
    let psid = rc.wait_provider_id(&id);
    support::wait_until(
        "claude's transcript under account one's folder holds the answer",
        REAL_DEADLINE,
        || {
            files_naming(&one.join("projects"), &psid).iter().any(|p| {
                fs::read_to_string(p).is_ok_and(|t| t.contains("ANSWER(before the limit)"))
            })
        },
    );
    let first = rc
        .api
        .wait_request("the first turn", |r| r["turn"] == "before the limit");
    assert_eq!(key_of(&first), KEY_LIMITED, "account one's key");

    rc.api.script(json!({"rules": [
        {"api": "anthropic", "key": KEY_LIMITED, "limit": {"lasts_secs": 3600}}
    ]}));
    rc.submit(&id, "over the limit");
    let refused = rc.api.wait_request("the refusal", |r| {
        r["api"] == "anthropic" && r["reply"]["fail"] == 429
    })["n"]
        .as_u64()
        .unwrap_or(0);
    carried_on_under_two(&rc, &id, &psid, "anthropic", refused);
    let carried = files_naming(&two.join("projects"), &psid);
    assert!(
        carried
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "jsonl")),
        "the transcript was carried to account two's folder: {carried:?}"
    );
}

#[test]
fn a_limited_codex_account_fails_over_to_the_other_codex_home_with_the_same_conversation() {
    let Some(rc) = RealCli::start() else {
        return;
    };
    let key_var = "HANGAR_TEST_CODEX_ACCOUNT_KEY";
    let one = codex_account_folder(&rc, "codex-one", key_var);
    let two = codex_account_folder(&rc, "codex-two", key_var);
    rc.hangar_config(&accounts_config(&rc, "codex", &one, &two, key_var));
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "codex", "--account", "one"]);
    rc.wait_ready(&id);
    rc.ask(&id, "before the limit");
    let psid = rc.wait_provider_id(&id);
    let first = rc
        .api
        .wait_request("the first turn", |r| r["turn"] == "before the limit");
    assert_eq!(key_of(&first), KEY_LIMITED, "account one's key");
    assert!(
        !files_naming(&one.join("sessions"), &psid).is_empty(),
        "codex keeps the rollout under account one's CODEX_HOME"
    );

    rc.api.script(json!({"rules": [
        {"api": "responses", "key": KEY_LIMITED, "limit": {"lasts_secs": 3600}}
    ]}));
    rc.submit(&id, "over the limit");
    let refused = rc.api.wait_request("the refusal", |r| {
        r["api"] == "responses" && r["reply"]["fail"] == 429
    })["n"]
        .as_u64()
        .unwrap_or(0);
    carried_on_under_two(&rc, &id, &psid, "responses", refused);
    assert!(
        !files_naming(&two.join("sessions"), &psid).is_empty(),
        "the rollout was carried to account two's CODEX_HOME"
    );
}
