//! Issue 21 acceptance through a real browser: headless Chromium (Debian's
//! `chromium` + `chromium-driver`) driven over WebDriver opens the URL
//! `hangar web` printed, on a 390x844 phone screen and on a desktop.
//!
//! What a person would notice: pairing by the printed URL leaves no token in
//! the address bar; the list groups sessions by tab with parked ones apart
//! and waiting agents first, and changes live; typing into xterm.js reaches
//! the session (`hangar screen` shows it); a waiting agent is answered from
//! the page; nothing scrolls sideways on a phone; untrusted titles are text;
//! a read-only pairing cannot type or act. Skips with one line when Chromium
//! is not installed.

use crate::support;
use crate::web_support;

use serde_json::json;
use support::*;
use web_support::{Browser, Screen, WebServer};

/// True when the page does not scroll sideways.
const NO_OVERFLOW: &str = "return document.documentElement.scrollWidth <= window.innerWidth \
    && document.body.scrollWidth <= window.innerWidth;";

fn screenshot_path(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir.join(name)
}

fn wait_activity(h: &Hangar, id: &str, state: &str) {
    h.wait_until(&format!("{id} is {state}"), DEADLINE, || {
        h.session(id)["activity"] == state
    });
}

#[test]
fn a_phone_pairs_by_the_printed_url_sees_waiting_agents_first_types_and_answers() {
    let bins = browser_or_skip!();
    let h = Hangar::new();
    h.write_config("[activity]\ndebounce_ms = 100\n[notify]\ndesktop = false\n");
    let shell = h.new_agent(&["--provider", "shell", "--title", "build shell"]);
    let agent = h.new_agent(&["--provider", "claude", "--title", "api review"]);
    let hostile = h.new_agent(&[
        "--provider",
        "shell",
        "--title",
        "<img src=x onerror=window.__pwned=1>",
    ]);
    let parked = h.new_agent(&["--provider", "shell", "--title", "for later", "--parked"]);
    h.wait_screen(&agent, "> ");
    wait_activity(&h, &agent, "idle");
    let web = WebServer::start(&h, &[]);
    let browser = Browser::start(&bins, Screen::Phone);

    // Pairing: the printed URL, then the token is gone from the address bar
    // and the cookie is out of the page's reach (HttpOnly).
    browser.goto(&web.url);
    browser.wait_js(
        "the list shows every session",
        &format!(
            "return document.querySelectorAll('a.row').length >= 4 && !!document.querySelector('a.row[data-session=\"{shell}\"]');"
        ),
    );
    assert_eq!(
        browser.js("return location.search + location.hash;", json!([])),
        json!("")
    );
    assert_eq!(
        browser.js("return document.cookie;", json!([])),
        json!(""),
        "the pairing cookie is HttpOnly"
    );
    assert_eq!(
        browser.js("return window.innerWidth;", json!([])),
        json!(390)
    );

    // Grouped by tab, parked apart.
    let parked_rows = browser.js(
        "return [...document.querySelectorAll('ul.parked a.row')].map(a => a.dataset.session);",
        json!([]),
    );
    assert_eq!(parked_rows, json!([parked]));
    // Untrusted titles are text, never markup.
    let hostile_title = browser.js(
        &format!(
            "const a = document.querySelector('a.row[data-session=\"{hostile}\"]'); \
             return [a.querySelector('.title').textContent, a.querySelectorAll('img').length, !!window.__pwned];"
        ),
        json!([]),
    );
    assert_eq!(
        hostile_title,
        json!(["<img src=x onerror=window.__pwned=1>", 0, false])
    );

    // A notification when an agent starts waiting: the browser API is
    // replaced by a recorder (headless Chromium shows none), permission granted.
    browser.js(
        "window.__notified = []; \
         window.Notification = class { constructor(t) { window.__notified.push(t); } \
           static get permission() { return 'granted'; } };",
        json!([]),
    );

    // Live: the agent starts waiting (typed by the CLI, not the page) and
    // the page, not reloaded, moves it to the top.
    h.ok(&["send", &agent, "ask which branch"]);
    wait_activity(&h, &agent, "waiting");
    browser.wait_js(
        "the waiting agent is listed first",
        &format!(
            "const w = document.querySelector('#waiting:not([hidden]) a.row'); \
             const first = document.querySelector('section.tab ul.panes a.row'); \
             return !!w && w.dataset.session === '{agent}' && first.dataset.session === '{agent}';"
        ),
    );
    browser.wait_js(
        "a notification was shown",
        "return window.__notified.length === 1 && window.__notified[0].includes('api review');",
    );
    assert!(
        browser.js(NO_OVERFLOW, json!([])) == json!(true),
        "list overflows"
    );
    browser.screenshot(&screenshot_path("phone-list.png"));

    // Answer the waiting agent from its page: a prompt through the form.
    browser.click(&format!("a.row[data-session=\"{agent}\"]"));
    browser.wait_js(
        "the session view shows it waiting",
        "return !document.getElementById('session-view').hidden && \
                !document.getElementById('s-waiting').hidden;",
    );
    browser.wait_js(
        "the terminal shows the question",
        "const r = document.querySelector('#term .xterm-rows'); return !!r && r.textContent.includes('which branch');",
    );
    browser.type_into("#prompt", "main please");
    browser.click("#send");
    h.wait_screen(&agent, "answer: main please");
    wait_activity(&h, &agent, "idle");
    browser.wait_js(
        "the page shows it idle again",
        "return document.getElementById('s-waiting').hidden;",
    );

    // A permission prompt answered with the key buttons.
    h.ok(&["send", &agent, "permission Bash"]);
    h.wait_screen(&agent, "Do you want to allow Bash?");
    wait_activity(&h, &agent, "waiting");
    browser.wait_js(
        "the permission prompt reaches the phone",
        "const r = document.querySelector('#term .xterm-rows'); return r.textContent.includes('allow Bash') \
         && !document.getElementById('s-waiting').hidden;",
    );
    browser.click("button[data-keys=\"1\"]");
    browser.click("button[data-keys=\"enter\"]");
    h.wait_screen(&agent, "allowed");
    browser.wait_js(
        "the terminal shows the answer live",
        "return document.querySelector('#term .xterm-rows').textContent.includes('allowed');",
    );
    assert!(
        browser.js(NO_OVERFLOW, json!([])) == json!(true),
        "session view overflows"
    );
    browser.screenshot(&screenshot_path("phone-session.png"));

    // Typing into xterm.js itself reaches the shell: the shell computes it.
    browser.goto(&format!("{}/#/s/{shell}", web.base));
    browser.wait_js(
        "the shell's terminal is attached",
        "const r = document.querySelector('#term .xterm-rows'); return !!r && /[$#] /.test(r.textContent);",
    );
    browser.type_into(".xterm-helper-textarea", "echo typed-$((6*7))\u{E007}");
    h.wait_screen(&shell, "typed-42");
    browser.wait_js(
        "the echo comes back to the browser",
        "return document.querySelector('#term .xterm-rows').textContent.includes('typed-42');",
    );

    // Interrupt: Ctrl-C ends a running command.
    browser.type_into(
        ".xterm-helper-textarea",
        "sleep 300; echo missed-$((2+5))\u{E007}",
    );
    h.wait_until("sleep runs", DEADLINE, || {
        h.screen(&shell).contains("sleep 300")
    });
    browser.click("button[data-action=\"interrupt\"]");
    // The shell prompts again once the interrupt ended `sleep` (typing
    // before that would be flushed with the interrupted job's input).
    h.wait_until("the interrupt ends sleep", DEADLINE, || {
        h.screen(&shell).trim_end().ends_with("^C\n#")
    });
    browser.type_into(".xterm-helper-textarea", "echo after-$((1+1))\u{E007}");
    h.wait_screen(&shell, "after-2");
    assert!(!h.screen(&shell).contains("missed-7"));

    // Hibernate and wake from the page; the CLI sees each.
    browser.click("button[data-action=\"hibernate\"]");
    h.wait_state(&shell, "hibernated");
    browser.wait_js(
        "the wake button appears",
        "return !document.querySelector('[data-action=\"wake\"]').hidden;",
    );
    browser.click("button[data-action=\"wake\"]");
    h.wait_state(&shell, "live");
}

#[test]
fn a_read_only_pairing_watches_but_cannot_type_or_act() {
    let bins = browser_or_skip!();
    let h = Hangar::new();
    let shell = h.new_agent(&["--provider", "shell", "--title", "watched"]);
    h.ok(&["send", &shell, "echo visible-$((2*3))"]);
    h.wait_screen(&shell, "visible-6");
    let web = WebServer::start(&h, &["--read-only"]);
    assert!(web.read_only);
    let browser = Browser::start(&bins, Screen::Desktop);
    browser.goto(&web.url);
    browser.wait_js(
        "the list is shown",
        "return document.querySelectorAll('a.row').length === 1;",
    );
    browser.click("a.row");
    browser.wait_js(
        "the screen is visible to the watcher",
        "const r = document.querySelector('#term .xterm-rows'); return !!r && r.textContent.includes('visible-6');",
    );
    assert_eq!(
        browser.js(
            "return [document.getElementById('controls').hidden, document.getElementById('banner').textContent];",
            json!([])
        ),
        json!([true, "Read-only view: you can watch, not type or act."])
    );
    // Typing into the terminal goes nowhere; a forged POST from the page is
    // refused by the server, not just hidden.
    browser.type_into(".xterm-helper-textarea", "echo typed-$((5*5))\u{E007}");
    let forged = browser.call_async(&format!(
        "const done = arguments[0]; fetch('/api/sessions/{shell}/send', {{method: 'POST', \
           headers: {{'Content-Type': 'application/json'}}, body: JSON.stringify({{text: 'echo forged'}})}})\
           .then(r => done(r.status));"
    ));
    assert_eq!(forged, json!(403));
    h.ok(&["send", &shell, "echo marker-$((3*3))"]);
    h.wait_screen(&shell, "marker-9");
    let screen = h.screen(&shell);
    assert!(!screen.contains("typed-25"), "{screen}");
    assert!(!screen.contains("forged"), "{screen}");
    assert!(browser.js(NO_OVERFLOW, json!([])) == json!(true));
    browser.screenshot(&screenshot_path("desktop-read-only.png"));

    // `hangar web --revoke` cuts the open terminal and the page says why.
    h.ok(&["web", "--revoke"]);
    browser.wait_js(
        "the page says its pairing was revoked",
        "return document.getElementById('banner').textContent.includes('revoked');",
    );
}
