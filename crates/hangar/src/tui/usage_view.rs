//! The TUI's usage view (`$` in command mode, so `Ctrl-b $` while typing):
//! the last 24 hours of `hangar usage`, one row per session with a bar of
//! its cost (or, with no price, its tokens), and each provider account's
//! windows and limit.
//!
//! Read once when opened (and again with `r`): the daemon answers from its
//! ledger, nothing polls a provider. Titles are agents' text: drawn escaped.

use hangar_core::display;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::tui::widgets;

/// Columns a session's title takes in a row.
const TITLE_COLS: usize = 20;

#[derive(Debug, Default)]
pub struct UsageDialog {
    /// The daemon's `hangar usage --json` document, once answered.
    pub reply: Option<Result<Value, String>>,
}

/// A session row's measure: its cost when priced, else its tokens.
fn measure(s: &Value) -> (f64, String) {
    let tokens = s["input_tokens"].as_f64().unwrap_or(0.0)
        + s["output_tokens"].as_f64().unwrap_or(0.0)
        + s["cache_read_tokens"].as_f64().unwrap_or(0.0)
        + s["cache_write_tokens"].as_f64().unwrap_or(0.0);
    match s["cost_usd"].as_f64() {
        Some(c) => (c, format!("${c:.2}")),
        None => (tokens, format!("{} tok, unpriced", compact(tokens))),
    }
}

fn compact(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// A bar of `value` out of `max` in `cols` columns (eighths of a block).
pub fn bar(value: f64, max: f64, cols: usize) -> String {
    if max <= 0.0 || !value.is_finite() || cols == 0 {
        return String::new();
    }
    let eighths = ((value / max).clamp(0.0, 1.0) * (cols * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8 - 1]);
    }
    s
}

/// The view's lines for `doc`, `width` columns wide.
pub fn lines(doc: &Value, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let total = &doc["total"];
    out.push(Line::from(Span::styled(
        format!(
            " last 24 h: {} requests, {} in / {} out tokens, ${:.2} at list prices{}",
            total["requests"].as_u64().unwrap_or(0),
            compact(total["input_tokens"].as_f64().unwrap_or(0.0)),
            compact(total["output_tokens"].as_f64().unwrap_or(0.0)),
            total["cost_usd"].as_f64().unwrap_or(0.0),
            match total["unpriced_requests"].as_u64().unwrap_or(0) {
                0 => String::new(),
                n => format!(" (+{n} unpriced)"),
            }
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )));
    let sessions: Vec<&Value> = doc["sessions"].as_array().into_iter().flatten().collect();
    // Priced and unpriced rows are measured in different units: each kind
    // gets its own scale.
    let max_of = |priced: bool| {
        sessions
            .iter()
            .filter(|s| s["cost_usd"].is_number() == priced)
            .map(|s| measure(s).0)
            .fold(0.0, f64::max)
    };
    let (max_cost, max_tokens) = (max_of(true), max_of(false));
    let bar_cols = width.saturating_sub(TITLE_COLS + 32).clamp(4, 60);
    for s in &sessions {
        let (value, label) = measure(s);
        let max = if s["cost_usd"].is_number() {
            max_cost
        } else {
            max_tokens
        };
        let title = s["title"]
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| s["id"].as_str())
            .unwrap_or("?");
        let title = display::pad(&display::name_fit(title, TITLE_COLS), TITLE_COLS);
        let color = if s["cost_usd"].is_number() {
            Color::Green
        } else {
            Color::DarkGray
        };
        out.push(Line::from(vec![
            Span::raw(format!(" {title} ")),
            Span::styled(
                format!("{:<bar_cols$}", bar(value, max, bar_cols)),
                Style::new().fg(color),
            ),
            Span::raw(format!(" {}", display::name(&label))),
        ]));
    }
    if sessions.is_empty() {
        out.push(Line::styled(
            " no requests recorded in the last 24 hours",
            Style::new().fg(Color::DarkGray),
        ));
    }
    for a in doc["accounts"].as_array().into_iter().flatten() {
        let mut text = format!(
            " {} {}",
            display::name(a["provider"].as_str().unwrap_or("?")),
            display::name(
                &a["account"]
                    .as_str()
                    .unwrap_or("?")
                    .chars()
                    .take(15)
                    .collect::<String>()
            )
        );
        for w in a["windows"].as_array().into_iter().flatten() {
            if let Some(p) = w["used_percent"].as_f64() {
                text.push_str(&format!(
                    "  {} {p:.0}%",
                    display::name(w["kind"].as_str().unwrap_or("?"))
                ));
            }
        }
        let limited = a["limited_until"].as_i64();
        let style = if a["limited_until"].is_null() {
            Style::new()
        } else {
            Style::new().fg(Color::Red)
        };
        if let Some(t) = limited {
            text.push_str(&format!("  limited {}", crate::usage::until_text(Some(t))));
        }
        out.push(Line::styled(text, style));
    }
    out
}

pub fn draw(frame: &mut Frame, d: &UsageDialog, area: Rect) {
    let r = widgets::large(area, (20, 6), (140, 40));
    let (inner_w, inner_h) = widgets::inner_size(r);
    let rows = inner_h.saturating_sub(1);
    let mut text = match &d.reply {
        None => vec![Line::styled(
            " reading the usage ledger…",
            Style::new().fg(Color::DarkGray),
        )],
        Some(Err(e)) => vec![Line::styled(
            format!(" {}", display::name(e)),
            Style::new().fg(Color::Red),
        )],
        Some(Ok(doc)) => lines(doc, inner_w),
    };
    text.truncate(rows);
    while text.len() < rows {
        text.push(Line::raw(""));
    }
    text.push(Line::styled(
        " r: read again  Esc: close",
        Style::new().fg(Color::DarkGray),
    ));
    widgets::popup(frame, r, " usage ", text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bars_scale_to_the_largest_and_unpriced_rows_say_so() {
        assert_eq!(bar(1.0, 1.0, 4), "████");
        assert_eq!(bar(0.5, 1.0, 4), "██");
        assert_eq!(bar(0.0, 1.0, 4), "");
        assert_eq!(bar(1.0, 0.0, 4), "");
        let doc = json!({
            "total": {"requests": 3, "input_tokens": 10, "output_tokens": 5, "cost_usd": 2.0,
                      "unpriced_requests": 1},
            "sessions": [
                {"id": "a", "title": "api review", "cost_usd": 2.0, "input_tokens": 1,
                 "output_tokens": 1},
                {"id": "b", "title": "\u{1b}[31mred", "cost_usd": null, "input_tokens": 1500,
                 "output_tokens": 0},
            ],
            "accounts": [{"provider": "claude", "account": "sha256:abc",
                          "windows": [{"kind": "five_hour", "used_percent": 42.0}],
                          "limited_until": null}],
        });
        let text: Vec<String> = lines(&doc, 100)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[0].contains("(+1 unpriced)"), "{text:?}");
        assert!(text[1].contains("api review") && text[1].contains("$2.00"));
        assert!(text[2].contains("1.5k tok, unpriced"), "{text:?}");
        assert!(!text[2].contains('\u{1b}'), "titles are escaped");
        assert!(text[3].contains("five_hour 42%"), "{text:?}");
    }
}
