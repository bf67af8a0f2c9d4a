//! Real-CLI conformance of the CLIs hangar drives from a shipped
//! description (`crates/hangar-providers/clis/NAME.toml`, issue 45 part 2):
//! each runs as `--provider NAME`, pinned from its registry, offline against
//! the fake model API, and must: start and answer; hibernate and wake into
//! the same conversation by its own id (the model is sent the earlier
//! answer); come back after a daemon restart resuming that id; read
//! working while a slow answer streams and idle after it; have each send
//! confirmed by its session file; and keep its id when the same CLI is run
//! by a person in the same folder.
//!
//! Each CLI's offline setup (its API flags, files and variables) is the one
//! its page in docs/clis/ records, given as `[providers.NAME] args` and
//! environment exactly as a person would.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::real_cli_more_support::{NpmCli, World, installed_or_skip, offline};
use crate::real_cli_support::REAL_DEADLINE;
use crate::support;

/// One CLI's offline setup and what its screen and requests look like.
struct Cli {
    /// The shipped provider's name (`--provider NAME`).
    provider: &'static str,
    /// Where it installs from, pinned (npm, or `pypi:`).
    package: NpmCli,
    /// The fake API's name for the wire it speaks (`chat`, `anthropic`, ...).
    api: &'static str,
    /// What its screen shows once it takes a prompt.
    ready: &'static str,
    /// Whether hangar sees its turns start (a session file it reads): its
    /// sends say `confirmed: true`; else they never say so.
    confirms: bool,
    /// `[providers.NAME]` lines beyond `program` (its API flags).
    config: fn(&World) -> String,
    /// Files and variables it needs, written before the daemon starts.
    prepare: fn(&mut World),
    /// A person's own run of the CLI in the same folder, answering
    /// `prompt` and leaving, as its page in docs/clis/ gives it.
    outside: fn(&World, &std::path::Path, &str) -> Command,
}

/// Whether the request's body carries `text` anywhere.
fn mentions(request: &Value, text: &str) -> bool {
    request["body"].to_string().contains(text)
}

/// `hangar screen ID` holds still with `ready` on it: these CLIs drop what
/// is typed while they finish starting, and a send into a custom CLI
/// cannot see a turn start.
fn wait_ready(world: &World, id: &str, cli: &Cli) {
    world.wait_screen_settled(id, cli.ready, Duration::from_secs(2));
}

/// Sends `text` and waits for the model's answer on the screen; returns
/// the request that carried it. The send is confirmed: the CLI's session
/// file shows the turn start.
fn ask(world: &World, id: &str, text: &str, cli: &Cli) -> Value {
    let out = world.hangar.run(&["--json", "send", id, text]);
    let sent: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success() && (sent["confirmed"] == true) == cli.confirms,
        "{text}: {sent} {}\nrequests for it: {:?}\nsession files:\n{}\nscreen:\n{}",
        String::from_utf8_lossy(&out.stderr),
        world
            .api
            .requests()
            .iter()
            .filter(|r| is_turn(r, text))
            .map(|r| r["target"].clone())
            .collect::<Vec<_>>(),
        session_files(world),
        world.hangar.screen(id)
    );
    // The screen first: its timeout shows the screen and the requests.
    world.wait_screen(id, &format!("ANSWER({text})"));
    wait_turn(world, text);
    // The turn's own request is its last: Gemini CLI's model router asks
    // first, with the prompt alone.
    world
        .api
        .requests()
        .into_iter()
        .rfind(|r| is_turn(r, text))
        .expect("the turn's request")
}

/// Whether request `r` carries the prompt `text` (Aider appends its edit
/// format's instructions to the prompt: docs/clis/aider.md).
fn is_turn(r: &Value, text: &str) -> bool {
    r["turn"].as_str().is_some_and(|t| t.starts_with(text))
}

/// The first request carrying the prompt `text`.
fn wait_turn(world: &World, text: &str) -> Value {
    world
        .api
        .wait_request(&format!("a model request for the turn {text:?}"), |r| {
            is_turn(r, text)
        })
}

/// Every JSON-lines file under the test's folder: its name, and the
/// `type` (or `message.role`) of each line, for a failure to show where a
/// CLI wrote its turns.
fn session_files(world: &World) -> String {
    support::files_under(&world.hangar.root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let kinds: Vec<String> = std::fs::read_to_string(&p)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|v| {
                    let kind = v.get("type").or_else(|| v.pointer("/message/role"));
                    kind.map_or("?".to_owned(), |k| k.to_string())
                })
                .collect();
            format!("{}: {}", p.display(), kinds.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The CLI run by a person in `work`, in hangar's test environment.
fn outside_run(world: &World, package: NpmCli, work: &std::path::Path) -> Command {
    let bin = crate::real_cli_support::install(package).expect("installed");
    let mut c = Command::new(bin);
    c.current_dir(work)
        .envs(world.hangar.env_vars().iter().map(|(k, v)| (k, v)));
    c
}

fn conformance(cli: &Cli) {
    let Some(bin) = installed_or_skip(cli.package) else {
        return;
    };
    let mut world = World::start();
    (cli.prepare)(&mut world);
    world.hangar.write_config(&format!(
        "[providers.{}]\nprogram = \"{}\"\n{}",
        cli.provider,
        bin.display(),
        (cli.config)(&world)
    ));
    world.hangar.start_daemon();
    let name = cli.provider;
    let id = world
        .hangar
        .new_agent(&["--provider", name, "--title", "conformance"]);
    wait_ready(&world, &id, cli);
    let (psid, source) = world.hangar.provider_id(&id);
    let psid = psid.unwrap_or_else(|| panic!("{name}: no conversation id on the row"));
    assert_eq!(source.as_deref(), Some("resume-request"), "{name}: minted");

    let first = ask(&world, &id, &format!("first {name} question"), cli);
    assert_eq!(first["api"], cli.api, "{name}: the turn went elsewhere");

    // Working while a slow answer is awaited, idle after it. The prompt
    // typed alone reads working for `INPUT_ALONE_MS`; only past that is it
    // the CLI's own record (its session file, its screen) that says so, so
    // the model stalls well beyond it.
    world.api.script(json!({"rules": [
        {"when": format!("slow {name} question"), "text": "a slow answer",
         "stall_ms": 15000, "delay_ms": 500}
    ]}));
    let typed_alone = Duration::from_millis(hangar_core::activity::INPUT_ALONE_MS + 1000);
    let sent = std::time::Instant::now();
    world
        .hangar
        .ok(&["send", &id, &format!("slow {name} question")]);
    support::wait_until(
        &format!("{name} reads working by its own record while it answers"),
        REAL_DEADLINE,
        || sent.elapsed() > typed_alone && world.hangar.session(&id)["activity"] == "working",
    );
    assert!(
        !world.hangar.screen(&id).contains("a slow answer"),
        "{name}: the working reading came after the answer"
    );
    world.wait_screen(&id, "a slow answer");
    let waited = world
        .hangar
        .run(&["wait", &id, "--until", "idle", "--timeout", "120s"]);
    assert!(
        waited.status.success(),
        "{name} never read idle after its answer: {}\nscreen:\n{}",
        String::from_utf8_lossy(&waited.stdout),
        world.hangar.screen(&id)
    );

    // Hibernate, then wake: the same conversation comes back by its id.
    world.hangar.ok(&["hibernate", &id]);
    world.hangar.wait_state(&id, "hibernated");
    world.hangar.ok(&["wake", &id]);
    world.hangar.wait_state(&id, "live");
    let pid = world.hangar.pid_of(&id);
    let args: Vec<String> = support::descendants_of(pid)
        .into_iter()
        .chain([pid])
        .flat_map(support::cmdline)
        .collect();
    // Pi (node) renames its process to `pi`, which hides its arguments:
    // then hangar's journal says the start was a resume.
    let renamed = args.len() <= 1;
    assert!(
        args.iter().any(|a| a.contains(&psid)) || renamed,
        "{name} was woken without its id {psid}: {args:?}"
    );
    assert!(
        world
            .hangar
            .journal()
            .iter()
            .any(|e| e["event"] == "spawn-begin" && e["session"] == id && e["resumed"] == true),
        "{name}: the wake was not a resume"
    );
    wait_ready(&world, &id, cli);
    let second = ask(&world, &id, &format!("second {name} question"), cli);
    assert!(
        mentions(&second, &format!("ANSWER(first {name} question)")),
        "the woken {name} did not continue its conversation: {second}"
    );

    // A person's own run in the same folder: another conversation, never
    // taken for this session's.
    let work = world.hangar.work.clone();
    let outside = (cli.outside)(&world, &work, "an outside question")
        .output()
        .expect("run the CLI outside hangar");
    assert!(
        outside.status.success(),
        "{name} outside hangar: {}{}",
        String::from_utf8_lossy(&outside.stdout),
        String::from_utf8_lossy(&outside.stderr)
    );
    wait_turn(&world, "an outside question");

    // A daemon restart restores the pane and resumes the same id.
    world.hangar.shutdown();
    world.hangar.start_daemon();
    world.hangar.wait_restore_complete();
    world.hangar.wait_state(&id, "live");
    wait_ready(&world, &id, cli);
    let third = ask(&world, &id, &format!("third {name} question"), cli);
    assert!(
        mentions(&third, &format!("ANSWER(second {name} question)")),
        "after a restart {name} did not resume its own conversation: {third}"
    );
    assert!(
        !mentions(&third, "an outside question"),
        "{name} resumed the outside run's conversation: {third}"
    );
    assert_eq!(
        world.hangar.provider_id(&id).0.as_deref(),
        Some(psid.as_str()),
        "{name}: the conversation keeps its id"
    );
}

/// docs/clis/qwen.md: chat completions by flags.
fn qwen_api_args(world: &World) -> Vec<String> {
    [
        "--auth-type",
        "openai",
        "--openai-base-url",
        &format!("{}/v1", world.api.http_url()),
        "--openai-api-key",
        "sk-fake-qwen",
    ]
    .map(str::to_owned)
    .to_vec()
}

const QWEN: Cli = Cli {
    provider: "qwen",
    package: NpmCli {
        package: "@qwen-code/qwen-code",
        version: "0.24.4",
        bin: "qwen",
    },
    api: "chat",
    ready: "Type your message",
    confirms: true,
    config: |world| format!("args = {:?}\n", qwen_api_args(world)),
    prepare: |world| {
        offline::qwen(world);
    },
    outside: |world, work, prompt| {
        let mut c = outside_run(world, QWEN.package, work);
        c.args(qwen_api_args(world)).args(["--prompt", prompt]);
        c
    },
};

const COPILOT: Cli = Cli {
    provider: "copilot",
    package: NpmCli {
        package: "@github/copilot",
        version: "1.0.102",
        bin: "copilot",
    },
    api: "chat",
    ready: "? help",
    confirms: true,
    config: |_| String::new(),
    prepare: |world| {
        offline::copilot(world);
    },
    outside: |world, work, prompt| {
        let mut c = outside_run(world, COPILOT.package, work);
        c.args(["-p", prompt]);
        c
    },
};

const GEMINI: Cli = Cli {
    provider: "gemini",
    package: NpmCli {
        package: "@google/gemini-cli",
        version: "0.61.0",
        bin: "gemini",
    },
    api: "gemini",
    ready: "Type your message",
    confirms: true,
    config: |_| String::new(),
    prepare: |world| {
        offline::gemini(world);
    },
    outside: |world, work, prompt| {
        let mut c = outside_run(world, GEMINI.package, work);
        c.args(["--prompt", prompt]);
        c
    },
};

/// docs/clis/pi.md: Anthropic Messages from its own models file, offline.
const PI: Cli = Cli {
    provider: "pi",
    package: NpmCli {
        package: "@mariozechner/pi-coding-agent",
        version: "0.73.1",
        bin: "pi",
    },
    api: "anthropic",
    ready: "/128k",
    confirms: true,
    config: |_| "args = [\"--provider\", \"fake\", \"--model\", \"fake-model\"]\n".to_owned(),
    prepare: |world| {
        offline::pi(world);
    },
    outside: |world, work, prompt| {
        let mut c = outside_run(world, PI.package, work);
        c.args([
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--print",
            prompt,
        ]);
        c
    },
};

/// docs/clis/aider.md: chat completions through litellm; the questions
/// it asks a first run in a folder turned off by flags, as a person does.
const AIDER: Cli = Cli {
    provider: "aider",
    package: NpmCli {
        package: "pypi:aider-chat",
        version: "0.86.2",
        bin: "aider",
    },
    api: "chat",
    ready: "Model: openai/fake-model",
    // It keeps no record hangar reads: its turns are its screen's.
    confirms: false,
    config: |_| format!("args = {:?}\n", AIDER_ARGS),
    prepare: |world| {
        let url = format!("{}/v1", world.api.http_url());
        world.hangar.set_env("OPENAI_API_BASE", url);
        world.hangar.set_env("OPENAI_API_KEY", "sk-fake-aider");
    },
    outside: |world, work, prompt| {
        let mut c = outside_run(world, AIDER.package, work);
        c.args(AIDER_ARGS).args(["--message", prompt]);
        c
    },
};

const AIDER_ARGS: [&str; 7] = [
    "--model",
    "openai/fake-model",
    "--no-check-update",
    "--no-show-release-notes",
    "--analytics-disable",
    "--no-show-model-warnings",
    "--no-git",
];

#[test]
fn aider_hibernates_wakes_restarts_and_reads_working_as_a_shipped_provider() {
    conformance(&AIDER);
}

#[test]
fn pi_hibernates_wakes_restarts_and_reads_working_as_a_shipped_provider() {
    conformance(&PI);
}

#[test]
fn copilot_cli_hibernates_wakes_restarts_and_reads_working_as_a_shipped_provider() {
    conformance(&COPILOT);
}

#[test]
#[ignore = "open race (RELIABILITY.md, Races found by load): under the whole suite's load Gemini \
            CLI 0.61 sometimes takes a prompt out of its input box and never starts its turn \
            (hangar sees it now and the send says not delivered); run with --ignored"]
fn gemini_cli_hibernates_wakes_restarts_and_reads_working_as_a_shipped_provider() {
    conformance(&GEMINI);
}

#[test]
fn qwen_code_hibernates_wakes_restarts_and_reads_working_as_a_shipped_provider() {
    conformance(&QWEN);
}
