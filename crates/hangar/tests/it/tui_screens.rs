//! Issue 5 acceptance, the TUI: the real `hangar` binary drawn inside a PTY,
//! read back through vt100, and snapshotted (uuids and ages masked, fixed
//! terminal size) for an empty workspace, three panes in two splits, the
//! parked list, the help overlay, a waking agent and a failed pane.

use crate::pty_screen;
use crate::support;

use pty_screen::{PtyApp, mask};
use support::*;

/// Start the daemon as a user does, by the CLI's auto-start. (The harness's
/// `start_daemon` can lose a race against the auto-start of its own
/// `status` probe on a loaded machine.)
fn start(h: &Hangar) {
    h.ok(&["status"]);
}

const ROWS: u16 = 36;
const COLS: u16 = 170;

fn tui(h: &Hangar) -> PtyApp {
    PtyApp::spawn(h.command(&[]), ROWS, COLS)
}

/// The screen once the TUI's output paused (a whole frame), masked.
fn screen(app: &PtyApp) -> String {
    mask(
        &app.settled_rows(std::time::Duration::from_millis(150))
            .join("\n"),
    )
}

fn banners(text: &str) -> usize {
    text.matches("fake-agent claude session").count()
}

#[test]
fn an_empty_workspace_says_how_to_start() {
    let h = Hangar::new();
    start(&h);
    let app = tui(&h);
    app.wait_text("No agents yet");
    insta::assert_snapshot!("empty_workspace", screen(&app));
}

#[test]
fn three_panes_in_two_splits_each_show_their_session() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    h.split(&b, "horizontal");
    let app = tui(&h);
    // A fresh agent is idle once its prompt is up; waiting for that keeps
    // the snapshot free of the moment before.
    app.wait_for("three live, idle panes with their banners", |t| {
        banners(t) == 3 && t.matches("· live · idle").count() == 3
    });
    insta::assert_snapshot!("three_panes_two_splits", screen(&app));
}

#[test]
fn the_side_list_shows_the_tabs_parked_agents_and_buried_panes() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    h.new_agent(&["--provider", "codex", "--parked", "--title", "review api"]);
    h.new_agent(&["--provider", "claude", "--parked", "--title", "fix tests"]);
    let gone = h.split(&a, "vertical");
    h.ok(&["bury", &gone]);
    h.ok(&["pin", &a]);
    let app = tui(&h);
    app.wait_for("two parked, one buried, one live idle pane", |t| {
        t.contains("review api")
            && t.contains("fix tests")
            && banners(t) == 1
            && t.contains("· live · idle")
            && t.matches("live idle").count() == 2
            && t.matches("hib ?").count() == 2
    });
    insta::assert_snapshot!("parked_list", screen(&app));
}

#[test]
fn question_mark_opens_the_help_overlay_and_esc_closes_it() {
    let h = Hangar::new();
    start(&h);
    let mut app = tui(&h);
    app.wait_text("No agents yet");
    app.write(b"?");
    app.wait_text("keys (Esc closes)");
    insta::assert_snapshot!("help_overlay", screen(&app));
    app.write(b"\x1b");
    app.wait_for("the overlay is gone", |t| !t.contains("keys (Esc closes)"));
}

#[test]
fn a_hibernated_agent_shows_its_last_screen_and_waking_until_it_is_live() {
    // Every start of the fake agent takes 3 s: long enough to see it wake.
    let h = Hangar::with_env(&[("FAKE_AGENT_START_DELAY_MS", "3000")]);
    start(&h);
    let a = h.new_pane();
    h.ok(&["send", &a, "remember me"]);
    h.wait_screen(&a, "answer: remember me");
    // The saved screen must hold the prompt that follows the answer.
    h.wait_until("the prompt is back after the answer", DEADLINE, || {
        h.screen(&a).trim_end().ends_with('>')
    });
    h.ok(&["hibernate", &a]);
    h.wait_state(&a, "hibernated");
    let app = tui(&h);
    app.wait_for("the tab bar and the saved screen with a waking line", |t| {
        t.contains("waking...")
            && t.contains("answer: remember me")
            && t.contains(" hangar ")
            && t.contains("· waking · idle")
    });
    insta::assert_snapshot!("waking_agent", screen(&app));
    app.wait_for("the pane is live and resumed", |t| {
        !t.contains("waking...") && t.contains("(resumed)")
    });
    assert_eq!(h.state_of(&a), "live");
}

#[test]
fn a_failed_pane_shows_its_reason_and_retries_on_w() {
    // Claude's program comes from config.toml (the empty variable defers to
    // it): a wrapper that fails until a file exists, then runs the fake.
    let h = Hangar::with_env(&[("HANGAR_CLAUDE_BIN", "")]);
    let ok = h.root.join("ok");
    let wrapper = h.root.join("flaky-claude");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif [ -f {ok} ]; then exec {fake} \"$@\"; fi\necho 'cannot reach the model server'\nexit 1\n",
            ok = ok.display(),
            fake = fake_agent_bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::create_dir_all(&h.home).unwrap();
    std::fs::write(
        h.home.join("config.toml"),
        format!("[providers.claude]\nprogram = \"{}\"\n", wrapper.display()),
    )
    .unwrap();
    start(&h);
    let a = h.new_pane();
    h.wait_state(&a, "failed");
    let mut app = tui(&h);
    app.wait_for("the failure reason", |t| {
        t.contains("cannot reach the model server") && t.contains("press w to retry")
    });
    let root = h.root.display().to_string();
    insta::assert_snapshot!("failed_pane", screen(&app).replace(&root, "<root>"));
    std::fs::write(&ok, "").unwrap();
    app.write(b"w");
    app.wait_for("the retried pane is live", |t| banners(t) == 1);
    assert_eq!(h.state_of(&a), "live");
}

#[test]
fn every_pane_shows_its_activity_and_agents_waiting_for_you_are_parked_first() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let asking = h.new_agent(&["--provider", "claude", "--title", "asks you"]);
    h.ok(&["send", &asking, "ask which branch"]);
    h.wait_until("the asking agent is waiting", DEADLINE, || {
        h.session(&asking)["activity"] == "waiting"
    });
    h.ok(&["park", &asking]);
    // Parked after the asking one, so by recency alone it would come first.
    h.new_agent(&["--provider", "codex", "--parked", "--title", "later"]);
    h.wait_until("the pane is idle", DEADLINE, || {
        h.session(&a)["activity"] == "idle"
    });
    let app = tui(&h);
    app.wait_for("the idle pane and both parked agents", |t| {
        t.contains("· live · idle") && t.contains("asks you") && t.contains("later")
    });
    let text = app.rows().join("\n");
    let row = |needle: &str| {
        app.rows()
            .into_iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("no row with {needle:?} in\n{text}"))
    };
    assert!(
        row("asks you") < row("later"),
        "the agent waiting for you is listed first:\n{text}"
    );
    let asking_row = &app.rows()[row("asks you")];
    assert!(asking_row.contains("live wait"), "{asking_row}");
    let later_row = &app.rows()[row("later")];
    assert!(later_row.contains("hib ?"), "{later_row}");
}
