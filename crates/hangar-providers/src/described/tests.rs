//! The description format, every shipped file, and the launch each gives.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hangar_core::activity::Activity;
use hangar_core::{IdSource, Provider, ProviderSessionId, SessionId, SessionMeta};

use super::format::{DescriptionError, parse};
use super::*;
use crate::config::ProvidersConfig;
use crate::launch::{LaunchEnv, launch_spec};

#[test]
fn every_shipped_file_parses() {
    let shipped = parse_shipped().unwrap();
    let names: Vec<&str> = shipped.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "gemini", "pi", "qwen", "copilot", "crush", "kilo", "aider", "kimi"
        ]
    );
    for (name, config) in &shipped {
        assert!(
            shipped_adapter(&Provider::from_name(name))
                .tested_version()
                .is_some(),
            "{name}"
        );
        assert!(
            config.package.is_some(),
            "{name} says where it is installed from"
        );
        assert!(!config.resume_args.is_empty(), "{name} resumes");
        // Every shipped CLI is an agent `hangar new` and `doctor` know.
        assert!(Provider::AGENT_CLIS.contains(&Provider::from_name(name)));
    }
}

#[test]
fn each_shipped_file_says_where_its_facts_come_from() {
    for (name, _, text) in SHIPPED {
        let first = text.lines().take(6).collect::<Vec<_>>().join("\n");
        let cites_a_version = first.chars().any(|c| c.is_ascii_digit()) && first.contains('#');
        assert!(cites_a_version, "{name}: the header names the version read");
    }
}

#[test]
fn an_unknown_key_is_refused_naming_the_file_and_the_key() {
    let e = parse("clis/x.toml", "program = \"x\"\nresume_arg = [\"-r\"]\n").unwrap_err();
    let DescriptionError::Toml { file, message } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(file, "clis/x.toml");
    assert!(message.contains("resume_arg"), "{message}");
    let e = parse(
        "clis/x.toml",
        "resume_args = [\"-r\", \"{id}\"]\n[id]\nhow = \"minted\"\nargs = [\"--id\", \"{id}\"]\nextra = 1\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("extra"), "{e}");
    let e = parse(
        "clis/x.toml",
        "resume_args = [\"-r\", \"{id}\"]\n[activity.screen]\nwaitng = [\"?\"]\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("waitng"), "{e}");
}

#[test]
fn a_placeholder_its_key_does_not_offer_or_a_missing_id_is_refused() {
    let e = parse("my.toml", "resume_args = [\"--resume\", \"{from}\"]\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "my.toml: key `resume_args`: `{from}` is not a placeholder here (it takes {id}, {state}, {cwd})"
    );
    let e = parse("my.toml", "resume_args = [\"--resume\"]\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "my.toml: key `resume_args`: must hold `{id}`"
    );
    let e = parse(
        "my.toml",
        "resume_args = [\"-r\", \"{id}\"]\n[id]\nhow = \"minted\"\nargs = [\"--session\"]\n",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "my.toml: key `id.args`: must hold `{id}`");
    let e = parse(
        "my.toml",
        "resume_args = [\"-r\", \"{id}\"]\n[id]\nhow = \"found\"\n",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("my.toml: key `id.how`: a found id needs [session_files]")
    );
    let e = parse(
        "my.toml",
        "resume_args = [\"-r\", \"{id}\"]\n[id]\nhow = \"listed\"\nargs = [\"ls\"]\npattern = \"^(\\\\w+)\"\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("named `id`"), "{e}");
    let e = parse(
        "my.toml",
        "resume_args = [\"--session\", \"{state}/{id}\"]\n",
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("my.toml: key `state`"), "{e}");
    let e = parse("my.toml", "package = \"cargo:x\"\n").unwrap_err();
    assert!(e.to_string().contains("npm: or pypi:"), "{e}");
}

#[test]
fn the_old_custom_provider_keys_still_read() {
    let c = parse(
        "config.toml [providers.deploy]",
        "program = \"deploy\"\nargs = [\"--x\"]\nresume_args = [\"--resume\", \"{id}\"]\n\
         dangerous_args = [\"--yes\"]\nenv = { A = \"1\" }\nauth_patterns = [\"login\"]\n\
         auth_exit_codes = [3]\nsandbox = true\n",
    )
    .unwrap();
    assert_eq!(c.program.as_deref(), Some("deploy"));
    assert!(c.sandbox);
    assert_eq!(c.auth_exit_codes, Some(vec![3]));
}

#[test]
fn a_config_table_over_a_shipped_file_wins_key_by_key() {
    let over = ProviderConfig {
        program: Some("/opt/gemini".into()),
        dangerous_args: vec!["--approval-mode".into(), "yolo".into()],
        env: BTreeMap::from([("GEMINI_API_KEY".to_owned(), "k".to_owned())]),
        ..ProviderConfig::default()
    };
    let providers = ProvidersConfig::from([("gemini".to_owned(), over)]);
    let c = description(&Provider::Gemini, &providers).unwrap();
    assert_eq!(c.program.as_deref(), Some("/opt/gemini"));
    assert_eq!(c.dangerous_args, ["--approval-mode", "yolo"]);
    // Keys the table leaves out keep the file's.
    assert_eq!(c.resume_args, ["--resume", "{id}"]);
    assert!(matches!(c.id, Some(IdRule::Minted { .. })));
    assert_eq!(c.env["GEMINI_API_KEY"], "k");
    // A custom provider's table is its whole description; a CLI with its
    // own adapter and no file has none.
    assert!(description(&Provider::Custom("none".into()), &providers).is_none());
    assert!(description(&Provider::Claude, &providers).is_none());
}

/// A launch of `meta` with every program found (as `true`), the home
/// `/home/u`, and `vars` more variables.
fn launched_with(
    meta: &SessionMeta,
    providers: &ProvidersConfig,
    dangerous: bool,
    fork_from: Option<&str>,
    vars: &[(&str, &str)],
) -> crate::launch::LaunchSpec {
    let bin = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap()
        .to_owned();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let var = move |k: &str| {
        if k.ends_with("_BIN") {
            return Some(bin.clone());
        }
        if k == "HOME" {
            return Some("/home/u".to_owned());
        }
        vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    };
    let env = LaunchEnv {
        providers,
        var: &var,
        dangerous,
        mint: &|| "minted-uuid".to_owned(),
        fork_from,
    };
    launch_spec(meta, &env).unwrap()
}

fn meta(provider: Provider, resume: Option<&str>) -> SessionMeta {
    let mut m = SessionMeta::new(SessionId::from("s1"), provider, "/w");
    m.provider_session = resume.map(|id| ProviderSessionId::new(id, IdSource::Transcript));
    m
}

#[test]
fn each_minted_cli_starts_fresh_with_the_id_hangar_chose_and_resumes_by_it() {
    let none = ProvidersConfig::default();
    let cases: [(Provider, &[&str], &[&str]); 6] = [
        (
            Provider::Gemini,
            &["--session-id", "minted-uuid"],
            &["--resume", "r-1"],
        ),
        (
            Provider::Qwen,
            &["--session-id", "minted-uuid"],
            &["--resume", "r-1"],
        ),
        (
            Provider::Copilot,
            &["--session-id", "minted-uuid"],
            &["--session-id", "r-1"],
        ),
        (
            Provider::Kimi,
            &["--session", "minted-uuid"],
            &["--session", "r-1"],
        ),
        (
            Provider::Pi,
            &[
                "--session",
                "/home/u/.pi/agent/sessions/hangar/minted-uuid.jsonl",
            ],
            &["--session", "/home/u/.pi/agent/sessions/hangar/r-1.jsonl"],
        ),
        (
            Provider::Aider,
            &[
                "--chat-history-file",
                ".aider.hangar-minted-uuid.chat.history.md",
            ],
            &[
                "--chat-history-file",
                ".aider.hangar-r-1.chat.history.md",
                "--restore-chat-history",
            ],
        ),
    ];
    // Gemini and Qwen are asked whether they recorded `r-1`: under a state
    // folder holding it.
    let state = tempfile::tempdir().unwrap();
    let gemini_chats = state.path().join("g/.gemini/tmp/p1/chats");
    std::fs::create_dir_all(&gemini_chats).unwrap();
    std::fs::write(
        gemini_chats.join("session-2026-12-07T16-00-r-1.jsonl"),
        "{\"sessionId\":\"r-1\",\"startTime\":\"2026-12-07T16:00:00Z\"}\n\
         {\"type\":\"user\",\"content\":[{\"text\":\"hi\"}]}\n",
    )
    .unwrap();
    let qwen_chats = state.path().join("q/projects/-w/chats");
    std::fs::create_dir_all(&qwen_chats).unwrap();
    std::fs::write(
        qwen_chats.join("r-1.jsonl"),
        "{\"sessionId\":\"r-1\",\"cwd\":\"/w\",\"type\":\"user\"}\n",
    )
    .unwrap();
    let g = state.path().join("g").display().to_string();
    let q = state.path().join("q").display().to_string();
    let vars = [("GEMINI_CLI_HOME", g.as_str()), ("QWEN_HOME", q.as_str())];
    for (provider, fresh, resume) in cases {
        let spec = launched_with(&meta(provider.clone(), None), &none, false, None, &vars);
        assert_eq!(spec.args, fresh, "{provider} fresh");
        assert_eq!(
            spec.minted,
            Some(ProviderSessionId::new(
                "minted-uuid",
                IdSource::ResumeRequest
            )),
            "{provider}: the minted id is recorded at once"
        );
        assert!(!spec.resumed);
        let spec = launched_with(
            &meta(provider.clone(), Some("r-1")),
            &none,
            false,
            None,
            &vars,
        );
        assert_eq!(spec.args, resume, "{provider} resume");
        assert!(spec.resumed, "{provider}");
        assert_eq!(spec.minted, None);
    }
}

#[test]
fn a_minted_conversation_the_cli_never_recorded_starts_fresh_under_a_new_id() {
    // Gemini's --resume refuses an id it does not have, or whose file holds
    // no message yet; the session was stopped before its first prompt
    // reached the CLI.
    let home = tempfile::tempdir().unwrap();
    let chats = home.path().join(".gemini/tmp/p1/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(
        chats.join("session-2026-12-07T16-00-never-us.jsonl"),
        "{\"sessionId\":\"never-used\",\"startTime\":\"2026-12-07T16:00:00Z\"}\n",
    )
    .unwrap();
    let h = home.path().display().to_string();
    let spec = launched_with(
        &meta(Provider::Gemini, Some("never-used")),
        &ProvidersConfig::default(),
        false,
        None,
        &[("GEMINI_CLI_HOME", &h)],
    );
    assert_eq!(spec.args, ["--session-id", "minted-uuid"]);
    assert!(!spec.resumed);
    assert_eq!(spec.minted.map(|m| m.id).as_deref(), Some("minted-uuid"));
    // Copilot's one flag starts and resumes: its id is always resumed,
    // recorded or not.
    let spec = launched_with(
        &meta(Provider::Copilot, Some("never-used")),
        &ProvidersConfig::default(),
        false,
        None,
        &[("COPILOT_HOME", &h)],
    );
    assert_eq!(spec.args, ["--session-id", "never-used"]);
    assert!(spec.resumed);
}

#[test]
fn the_dangerous_flag_comes_before_the_session_arguments() {
    let none = ProvidersConfig::default();
    let spec = launched_with(
        &meta(Provider::Crush, Some("abc1234")),
        &none,
        true,
        None,
        &[],
    );
    assert_eq!(spec.args, ["--yolo", "--session", "abc1234"]);
    // A CLI whose id hangar cannot choose starts fresh with no id.
    let spec = launched_with(&meta(Provider::Crush, None), &none, false, None, &[]);
    assert!(spec.args.is_empty());
    assert_eq!(spec.minted, None);
    let spec = launched_with(&meta(Provider::Aider, Some("a")), &none, true, None, &[]);
    assert_eq!(spec.args[0], "--yes-always");
}

#[test]
fn a_fork_uses_the_clis_fork_arguments_and_a_cli_without_one_starts_as_usual() {
    let none = ProvidersConfig::default();
    let spec = launched_with(
        &meta(Provider::Kilo, None),
        &none,
        false,
        Some("ses_1"),
        &[],
    );
    assert_eq!(spec.args, ["--session", "ses_1", "--fork"]);
    assert!(spec.resumed);
    assert_eq!(spec.minted, None, "Kilo chooses the fork's id");
    // Qwen has no fork hangar can prove: a fresh start under a minted id.
    let spec = launched_with(&meta(Provider::Qwen, None), &none, false, Some("q-1"), &[]);
    assert_eq!(spec.args, ["--session-id", "minted-uuid"]);
}

#[test]
fn a_custom_provider_described_in_config_mints_resumes_and_forks() {
    let table = parse(
        "config.toml [providers.mycli]",
        "program = \"mycli\"\nargs = [\"--tui\"]\nresume_args = [\"--resume\", \"{id}\"]\n\
         fork_args = [\"--from\", \"{from}\", \"--as\", \"{id}\"]\nenv = { MYCLI_TELEMETRY = \"0\" }\n\
         [id]\nhow = \"minted\"\nargs = [\"--new\", \"{id}\"]\n",
    )
    .unwrap();
    let providers = ProvidersConfig::from([("mycli".to_owned(), table)]);
    let custom = Provider::Custom("mycli".into());
    let spec = launched_with(&meta(custom.clone(), None), &providers, false, None, &[]);
    assert_eq!(spec.args, ["--tui", "--new", "minted-uuid"]);
    assert_eq!(spec.env["MYCLI_TELEMETRY"], "0");
    let spec = launched_with(
        &meta(custom.clone(), Some("c-9")),
        &providers,
        false,
        None,
        &[],
    );
    assert_eq!(spec.args, ["--tui", "--resume", "c-9"]);
    let spec = launched_with(&meta(custom, None), &providers, false, Some("c-9"), &[]);
    assert_eq!(spec.args, ["--tui", "--from", "c-9", "--as", "minted-uuid"]);
    assert_eq!(spec.minted.map(|m| m.id).as_deref(), Some("minted-uuid"));
}

#[test]
fn a_shipped_cli_missing_from_path_names_its_variable() {
    let providers = ProvidersConfig::default();
    let var = |k: &str| (k == "PATH").then(|| "/nonexistent".to_owned());
    let env = LaunchEnv {
        providers: &providers,
        var: &var,
        dangerous: false,
        mint: &String::new,
        fork_from: None,
    };
    let e = launch_spec(&meta(Provider::Copilot, None), &env).unwrap_err();
    assert_eq!(
        e.to_string(),
        "copilot not found on PATH; set HANGAR_COPILOT_BIN or install it"
    );
}

#[test]
fn mcp_is_given_where_the_file_says_and_nowhere_else() {
    let server = McpServer {
        command: PathBuf::from("/bin/hangar"),
        args: vec!["mcp".into()],
        env: BTreeMap::new(),
        config_file: PathBuf::from("/h/mcp/s1.json"),
    };
    let none = ProvidersConfig::default();
    let spec = launched_with(&meta(Provider::Kimi, Some("k")), &none, false, None, &[]);
    let spec = crate::launch::with_mcp(spec, &Provider::Kimi, &server);
    assert_eq!(
        spec.args,
        ["--mcp-config-file", "/h/mcp/s1.json", "--session", "k"]
    );
    assert!(crate::adapter::adapter(&Provider::Qwen).takes_mcp());
    assert!(!crate::adapter::adapter(&Provider::Gemini).takes_mcp());
    let spec = launched_with(&meta(Provider::Pi, Some("p")), &none, false, None, &[]);
    assert_eq!(
        crate::launch::with_mcp(spec.clone(), &Provider::Pi, &server),
        spec
    );
}

#[test]
fn versions_are_read_with_the_files_pattern_or_the_first_version() {
    use hangar_core::cli_versions::Version;
    let copilot = crate::adapter::adapter(&Provider::Copilot);
    assert_eq!(
        copilot.version_in(
            "GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.\n"
        ),
        Some(Version(1, 0, 102))
    );
    let facts =
        crate::cli_facts::CliFacts::from_outputs(&Provider::Kimi, "kimi, version 1.51.0\n", None);
    assert_eq!(facts.version, Some(Version(1, 51, 0)));
    assert_eq!(
        crate::cli_facts::tested(&Provider::Gemini),
        Some(Version(0, 61, 0))
    );
    assert_eq!(
        crate::adapter::adapter(&Provider::Gemini).npm_package(),
        Some("@google/gemini-cli")
    );
    assert_eq!(
        crate::adapter::adapter(&Provider::Aider).npm_package(),
        None
    );
}

#[test]
fn crushs_listing_gives_its_ids() {
    let crush = &shipped("crush").unwrap().config;
    let out = "3f2a9c1 \"fix the build\" 2026-12-07T16:00:00Z (just now)\n\
               not a session line\n\
               0abc123 \"\" 2026-12-06T10:00:00Z (yesterday)\n";
    assert_eq!(listed_ids(crush, out), ["3f2a9c1", "0abc123"]);
}

#[test]
fn a_shipped_clis_screen_waiting_patterns_open_a_prompt() {
    // The pattern is the file's; the open-prompt rule is screen.rs'.
    let screen = "│ Allow execution of: 'rm -rf build'?\n│ 1. Allow once\n│ 2. No\n";
    assert!(crate::screen::permission_prompt_open(
        &Provider::Gemini,
        screen
    ));
    assert!(!crate::screen::permission_prompt_open(
        &Provider::Pi,
        screen
    ));
    let aider = "Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:";
    assert!(crate::screen::permission_prompt_open(
        &Provider::Aider,
        aider
    ));
}

/// A described CLI's session file is its transcript: found by the id it
/// holds, its last prompt or answer its activity, a prompt in new lines a
/// turn's start. The records are Qwen Code 0.24.4's shape as its file
/// cites (`{uuid, parentUuid, sessionId, timestamp, type, cwd, message}`,
/// chunk-DPEB6S2R.js createBaseRecord), cut to the fields read.
#[test]
fn a_described_clis_session_file_is_its_transcript() {
    let qwen = shipped_adapter(&Provider::from_name("qwen"));
    let state = qwen.transcript_state().expect("qwen's session files");
    assert_eq!((state.var, state.under_home), ("QWEN_HOME", ".qwen"));
    let root = tempfile::tempdir().unwrap();
    let line = |kind: &str, id: &str| {
        serde_json::json!({"uuid": "u", "parentUuid": null, "sessionId": id,
            "timestamp": "2026-12-08T02:00:00.000Z", "type": kind, "cwd": "/w",
            "message": {"role": kind, "parts": [{"text": "hi"}]}})
        .to_string()
    };
    for (folder, id) in [("-a", "other"), ("-w", "5b0e9c27")] {
        let chats = root.path().join("projects").join(folder).join("chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::write(
            chats.join(format!("{id}.jsonl")),
            format!("{}\n", line("user", id)),
        )
        .unwrap();
    }
    let found = qwen.find_transcript(root.path(), "/w", "5b0e9c27").unwrap();
    assert!(
        found.ends_with("projects/-w/chats/5b0e9c27.jsonl"),
        "{found:?}"
    );
    assert_eq!(qwen.find_transcript(root.path(), "/w", "nobody"), None);

    let prompted = vec![line("user", "5b0e9c27")];
    let answered = vec![line("user", "5b0e9c27"), line("assistant", "5b0e9c27")];
    let activity = |lines: &[String]| qwen.transcript_reading(lines, true, 7).map(|r| r.activity);
    assert_eq!(activity(&prompted), Some(Activity::Working));
    assert_eq!(activity(&answered), Some(Activity::Idle));
    assert_eq!(activity(&[]), None);
    assert!(qwen.turn_facts(&prompted).prompted);
    assert!(!qwen.turn_facts(&answered[1..]).prompted, "an answer alone");

    // Gemini CLI keeps its state under `$GEMINI_CLI_HOME/.gemini`.
    let gemini = Provider::from_name("gemini");
    let home = |name: &str| match name {
        "GEMINI_CLI_HOME" => Some("/g".to_owned()),
        _ => None,
    };
    assert_eq!(
        crate::transcript::discovery::transcript_root(&gemini, &home),
        Some(PathBuf::from("/g/.gemini"))
    );
}

/// Aider keeps no record hangar reads: its screen says its turn. The lines
/// are what Aider 0.86.2 drew under hangar (its conformance run): a rule,
/// then `>` alone when idle; `> text` typed but not taken is neither; its
/// spinner's `Waiting for openai/fake-model` is working.
#[test]
fn a_cli_without_session_files_reads_its_turn_from_its_screen() {
    let aider = shipped_adapter(&Provider::from_name("aider"));
    let rule = "─".repeat(40);
    let idle =
        format!("ANSWER(first aider question)\n\nTokens: 594 sent, 6 received.\n{rule}\n>  \n\n");
    assert_eq!(aider.screen_activity(&idle), Some(Activity::Idle));
    let typed = format!("{rule}\n> slow aider question   \n");
    assert_eq!(aider.screen_activity(&typed), None, "typed, not taken");
    let working = format!("{rule}\n> slow aider question\n\n░█  Waiting for openai/fake-model\n");
    assert_eq!(aider.screen_activity(&working), Some(Activity::Working));
    // A CLI with session files reads its turns there, never its screen.
    let qwen = shipped_adapter(&Provider::from_name("qwen"));
    assert_eq!(qwen.screen_activity("  Type your message\n"), None);
    // A pattern that is not a regular expression is refused, named.
    let e = parse(
        "clis/x.toml",
        "program = \"x\"\n[activity.screen]\nidle = [\"(\"]\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("activity.screen.idle"), "{e}");
}
