//! Issue 31, item 7, through a real browser (headless Chromium over
//! WebDriver): the web page's terminal scrolls back through the session's
//! whole history as the TUI does, reading it from the daemon a page at a
//! time, with the wheel on a desktop and with a finger on a phone; scrolled
//! back down, the live terminal is back. Skips with one line when Chromium
//! is not installed.

use crate::support;
use crate::web_support;

use serde_json::{Value, json};
use support::*;
use web_support::{Browser, Screen, WebServer};

/// The page's history view: lines held, whether it is shown, and the text
/// of the first line visible in it.
const VIEW: &str = "const v = document.getElementById('history'); \
    if (!v) return [0, false, null]; \
    const top = v.getBoundingClientRect().top; \
    const rows = [...v.querySelectorAll('.hl')]; \
    const first = rows.find(r => r.getBoundingClientRect().bottom > top + 1); \
    return [rows.length, !v.hidden, first ? first.textContent : null];";

/// A shell that printed `seq 1 3000` (six pages of history), and a browser
/// showing its terminal.
fn shell_after_seq(h: &Hangar, web: &WebServer, browser: &Browser) -> String {
    let shell = h.new_agent(&["--provider", "shell", "--title", "long output"]);
    h.ok(&["send", &shell, "seq 1 3000; echo printed-$((40+2))"]);
    h.wait_screen(&shell, "printed-42");
    browser.goto(&web.url);
    browser.wait_js(
        "the list is shown",
        "return document.querySelectorAll('a.row').length === 1;",
    );
    browser.goto(&format!("{}/#/s/{shell}", web.base));
    browser.wait_js(
        "the terminal shows the end of the output",
        "const r = document.querySelector('#term .xterm-rows'); \
         return !!r && r.textContent.includes('printed-42');",
    );
    shell
}

fn view(browser: &Browser) -> (u64, bool, Option<String>) {
    let v = browser.js(VIEW, json!([]));
    (
        v[0].as_u64().unwrap_or(0),
        v[1] == Value::Bool(true),
        v[2].as_str().map(str::to_owned),
    )
}

/// The centre of the terminal's box, in viewport pixels.
fn term_centre(browser: &Browser) -> (i64, i64) {
    let v = browser.js(
        "const r = document.getElementById('term-box').getBoundingClientRect(); \
         return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];",
        json!([]),
    );
    (v[0].as_i64().unwrap_or(0), v[1].as_i64().unwrap_or(0))
}

fn wheel(browser: &Browser, delta: i64) {
    let (x, y) = term_centre(browser);
    browser.actions(json!([{
        "type": "wheel", "id": "wheel",
        "actions": [{"type": "scroll", "x": x, "y": y, "deltaX": 0, "deltaY": delta,
                     "origin": "viewport"}]
    }]));
}

/// A finger pulling the terminal (or the view over it) down by `dy` pixels.
fn swipe_down(browser: &Browser, dy: i64) {
    let (x, y) = term_centre(browser);
    browser.actions(json!([{
        "type": "pointer", "id": "finger", "parameters": {"pointerType": "touch"},
        "actions": [
            {"type": "pointerMove", "duration": 0, "origin": "viewport", "x": x, "y": y - dy / 2},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerMove", "duration": 150, "origin": "viewport", "x": x, "y": y + dy / 2},
            {"type": "pointerUp", "button": 0}
        ]
    }]));
}

#[test]
fn the_wheel_scrolls_the_web_terminal_back_to_line_1_a_page_at_a_time_and_down_to_live() {
    let bins = browser_or_skip!();
    let h = Hangar::new();
    let web = WebServer::start(&h, &[]);
    let browser = Browser::start(&bins, Screen::Desktop);
    let shell = shell_after_seq(&h, &web, &browser);
    assert!(!view(&browser).1, "no history view before scrolling");

    // One notch up: the view opens on the last lines, holding a page (not
    // the whole history) above the screen.
    wheel(&browser, -300);
    wait_until("the history view opens", DEADLINE, || view(&browser).1);
    let (held, _, first) = view(&browser);
    assert!(
        held < 3000,
        "the whole history was loaded at once ({held} lines)"
    );
    let first: u64 = first.unwrap_or_default().trim().parse().unwrap_or(0);
    assert!(first > 2900, "the view opened near the end: {first}");

    // Up and up: the pages above are read as the view reaches them.
    wait_until(
        "the wheel reaches the command above line 1 of seq",
        DEADLINE,
        || {
            let (_, shown, first) = view(&browser);
            if first.is_some_and(|f| f.contains("seq 1 3000;")) {
                return true;
            }
            assert!(shown, "the view closed while scrolling back");
            wheel(&browser, -20_000);
            false
        },
    );
    // Down again to the bottom: the live terminal is back.
    wait_until(
        "scrolling down to the bottom closes the view",
        DEADLINE,
        || {
            if !view(&browser).1 {
                return true;
            }
            wheel(&browser, 50_000);
            false
        },
    );
    h.ok(&["send", &shell, "echo after-$((2+3))"]);
    h.wait_screen(&shell, "after-5");
    browser.wait_js(
        "the live terminal goes on",
        "return document.querySelector('#term .xterm-rows').textContent.includes('after-5');",
    );
}

#[test]
fn a_finger_on_a_phone_scrolls_the_web_terminal_back_through_pages_of_history() {
    let bins = browser_or_skip!();
    let h = Hangar::new();
    let web = WebServer::start(&h, &[]);
    let browser = Browser::start(&bins, Screen::Phone);
    shell_after_seq(&h, &web, &browser);

    swipe_down(&browser, 200);
    wait_until("a swipe down opens the history view", DEADLINE, || {
        view(&browser).1
    });
    // Further swipes scroll the view itself, past the first page read.
    wait_until("swipes reach a line of the second page", DEADLINE, || {
        let (_, shown, first) = view(&browser);
        let first: u64 = first.unwrap_or_default().trim().parse().unwrap_or(u64::MAX);
        if first <= 2400 {
            return true;
        }
        assert!(shown, "the view closed while scrolling back");
        swipe_down(&browser, 300);
        false
    });
    browser.click("#live");
    wait_until("Back to live closes the view", DEADLINE, || {
        !view(&browser).1
    });
}
