//! Real-CLI conformance: each published CLI (Claude Code, Codex, OpenCode)
//! started by hangar answers a prompt typed with `hangar send`, and after a
//! hibernate/wake and after a daemon restart it resumes its *own*
//! conversation by its provider id (the model is sent the earlier turn).
//!
//! Runs against `hangar-fake-model-api`; skipped with one line when the
//! CLIs cannot be installed (see `real_cli_support`).

use crate::real_cli_support;
use crate::support;

use real_cli_support::RealCli;
use serde_json::Value;

/// Whether a recorded model request carries `text` anywhere in its body
/// (the conversation so far).
fn mentions(req: &Value, text: &str) -> bool {
    req["body"].to_string().contains(text)
}

/// The flag (or subcommand) each CLI resumes with.
fn resume_flag(provider: &str) -> &'static str {
    match provider {
        "claude" => "--resume",
        "codex" => "resume",
        _ => "--session",
    }
}

/// new + send, hibernate + wake, shutdown + restart, for one provider.
fn answers_and_resumes_its_own_conversation(provider: &str, api: &str) {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", provider, "--title", "conformance"]);
    rc.wait_ready(&id);
    rc.ask(&id, &format!("first {provider} question"));
    let psid = rc.wait_provider_id(&id);
    // Loopback never goes through hangar's proxy (defect 7): the real CLI
    // runs with both spellings of NO_PROXY naming every loopback form.
    let env = support::environ(rc.hangar.pid_of(&id));
    for var in ["NO_PROXY", "no_proxy"] {
        let value = env
            .iter()
            .find_map(|kv| kv.strip_prefix(&format!("{var}=")))
            .unwrap_or_else(|| panic!("{provider} runs without {var}"));
        let entries: Vec<&str> = value.split(',').collect();
        for loopback in ["127.0.0.1", "localhost", "::1"] {
            assert!(
                entries.contains(&loopback),
                "{var}={value} lacks {loopback}"
            );
        }
    }

    // Hibernate, then wake: the same conversation comes back.
    rc.hangar.ok(&["hibernate", &id]);
    rc.wait_state(&id, "hibernated");
    rc.hangar.ok(&["wake", &id]);
    rc.wait_state(&id, "live");
    let pid = rc.hangar.pid_of(&id);
    let args = support::cmdline(pid);
    let flag = resume_flag(provider);
    let all_args: Vec<String> = support::descendants_of(pid)
        .into_iter()
        .chain([pid])
        .flat_map(support::cmdline)
        .collect();
    assert!(
        all_args.windows(2).any(|w| w[0] == flag && w[1] == psid)
            || args.windows(2).any(|w| w[0] == flag && w[1] == psid),
        "the woken {provider} was not started with `{flag} {psid}`: {all_args:?}"
    );
    rc.wait_ready(&id);
    // Its conversation is known: hangar sees the turn start (claude's hook
    // or transcript, codex's rollout, OpenCode's database) and says so.
    let (sent, _) = rc.submit_sent(&id, &format!("second {provider} question"));
    assert_eq!(sent["confirmed"], true, "{provider}: {sent}");
    rc.wait_screen(&id, &format!("ANSWER(second {provider} question)"));
    let second = rc
        .api
        .wait_request("the second turn reached the model", |r| {
            r["api"] == api && r["turn"] == format!("second {provider} question")
        });
    assert!(
        mentions(&second, &format!("ANSWER(first {provider} question)")),
        "the woken {provider} did not continue its conversation: the model was not sent the first answer"
    );
    assert_eq!(
        rc.hangar.provider_id(&id).0.as_deref(),
        Some(psid.as_str()),
        "a resumed conversation keeps its provider id"
    );

    // A daemon restart restores the pane and resumes the same id.
    rc.hangar.shutdown();
    rc.hangar.start_daemon();
    rc.hangar.wait_restore_complete();
    rc.wait_state(&id, "live");
    rc.wait_ready(&id);
    rc.ask(&id, &format!("third {provider} question"));
    let third = rc
        .api
        .wait_request("the third turn reached the model", |r| {
            r["api"] == api && r["turn"] == format!("third {provider} question")
        });
    assert!(
        mentions(&third, &format!("ANSWER(second {provider} question)")),
        "after a restart {provider} did not resume its own conversation"
    );
    assert_eq!(rc.hangar.provider_id(&id).0.as_deref(), Some(psid.as_str()));
}

#[test]
fn claude_answers_and_resumes_its_own_conversation_after_hibernate_and_restart() {
    answers_and_resumes_its_own_conversation("claude", "anthropic");
}

#[test]
fn codex_answers_and_resumes_its_own_conversation_after_hibernate_and_restart() {
    answers_and_resumes_its_own_conversation("codex", "responses");
}

#[test]
fn opencode_answers_and_resumes_its_own_conversation_after_hibernate_and_restart() {
    answers_and_resumes_its_own_conversation("opencode", "chat");
}
