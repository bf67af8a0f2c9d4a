//! Real-CLI conformance, Pi 0.73.1 as a hangar custom provider, offline
//! against the fake API's Anthropic Messages through Pi's own models file
//! (docs/clis/pi.md): it answers, and writes its session to the file hangar
//! named with `--session <new path>` (Pi takes no chosen id, but a chosen
//! file), whose first line holds the id.

use std::fs;

use serde_json::Value;

use crate::real_cli_more_support::{NpmCli, World, installed_or_skip, offline};
use crate::support::wait_until;

const PI: NpmCli = NpmCli {
    package: "@mariozechner/pi-coding-agent",
    version: "0.73.1",
    bin: "pi",
};

#[test]
fn pi_answers_through_its_models_file_into_the_session_file_hangar_named() {
    let Some(bin) = installed_or_skip(PI) else {
        return;
    };
    let mut world = World::start();
    offline::pi(&mut world);
    let session_file = world.hangar.root.join("pi-sessions").join("chosen.jsonl");
    fs::create_dir_all(session_file.parent().expect("a folder")).expect("create folder");
    world.hangar.write_config(&format!(
        "[providers.pi-as-custom]\nprogram = \"{}\"\nargs = [\"--provider\", \"fake\", \
         \"--model\", \"fake-model\", \"--session\", \"{}\"]\n",
        bin.display(),
        session_file.display()
    ));
    world.hangar.start_daemon();
    let id = world.hangar.new_agent(&["--provider", "pi-as-custom"]);
    world.wait_screen(&id, "/128k");

    world.hangar.ok(&["send", &id, "hello pi"]);
    let turn = world.wait_turn("hello pi");
    assert_eq!(turn["api"], "anthropic", "the turn went elsewhere: {turn}");
    assert_eq!(turn["headers"]["x-api-key"], "sk-ant-fake-pi");
    world.wait_screen(&id, "ANSWER(hello pi)");

    wait_until(
        "Pi's session file holds the answer",
        crate::real_cli_support::REAL_DEADLINE,
        || fs::read_to_string(&session_file).is_ok_and(|t| t.contains("ANSWER(hello pi)")),
    );
    let text = fs::read_to_string(&session_file).expect("read the session file");
    let header: Value =
        serde_json::from_str(text.lines().next().unwrap_or("")).expect("a JSON first line");
    assert_eq!(header["type"], "session");
    assert_eq!(header["cwd"], world.hangar.work.display().to_string());
    assert!(
        header["id"].as_str().is_some_and(|i| i.len() == 36),
        "the session line carries no UUID: {header}"
    );
}
