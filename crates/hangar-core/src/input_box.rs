//! Whether a prompt hangar typed still sits in an agent's input box.
//!
//! Delivery presses Enter again only while it does (issue 44): an Enter the
//! agent dropped leaves the text in its box, and another Enter submits it;
//! once the text has left the box the agent took it, and a second Enter
//! could only send something twice (or an empty line to a CLI that answers
//! one). The rule reads the screen's bottom lines, where every agent CLI
//! keeps its input, with the box's borders and the wrapping taken out.

/// How many non-blank lines from the bottom the input box and the hints
/// under it may span.
const INPUT_WINDOW: usize = 6;

/// How much of the prompt's end is looked for (its start may have scrolled
/// out of a small box).
const TAIL_CHARS: usize = 24;

/// How many non-blank lines from the bottom a box drawn with rules may sit
/// in, a menu under it (Claude Code's slash-command list: up to a dozen
/// lines) pushing it up.
const BOXED_WINDOW: usize = 24;

/// The most lines a box's text may wrap over between its rules.
const BOX_TEXT_LINES: usize = 6;

/// What an agent shows in its box instead of a long paste (Claude Code:
/// `[Pasted text #1 +12 lines]`).
const PASTE_PLACEHOLDERS: &[&str] = &["[Pasted text"];

/// Characters that are the box, not the text: borders and prompt marks.
fn is_chrome(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '│' | '┃' | '║' | '|' | '╭' | '╮' | '╰' | '╯' | '─' | '━' | '>' | '›' | '❯'
        )
}

/// Whether `screen` (the agent's screen as text) still shows `typed` in its
/// input area: the end of its last non-blank line among the bottom lines,
/// across wrapping, or the agent's placeholder for a paste; or in a box
/// drawn with rules above and below it (Claude Code 2.1's), wherever a menu
/// under the box pushed it (typing `/clear` opens the command list).
pub fn still_in_input(screen: &str, typed: &str) -> bool {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(in_box) = in_a_ruled_box(&lines, typed) {
        // The box itself says: a prompt echoed just above it is not in it.
        return in_box;
    }
    let bottom = &lines[lines.len().saturating_sub(INPUT_WINDOW)..];
    if bottom
        .iter()
        .any(|l| PASTE_PLACEHOLDERS.iter().any(|p| l.contains(p)))
    {
        return true;
    }
    let Some(last_line) = typed.lines().rev().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let wanted: Vec<char> = last_line.chars().filter(|c| !is_chrome(*c)).collect();
    if wanted.is_empty() {
        return false;
    }
    let tail: String = wanted[wanted.len().saturating_sub(TAIL_CHARS)..]
        .iter()
        .collect();
    let shown: String = bottom
        .iter()
        .flat_map(|l| l.chars())
        .filter(|c| !is_chrome(*c))
        .collect();
    shown.contains(&tail)
}

/// The end of `typed`'s last line, without the box's chrome (at most
/// `TAIL_CHARS`); `None` when nothing was typed.
fn typed_tail(typed: &str) -> Option<String> {
    let last_line = typed.lines().rev().find(|l| !l.trim().is_empty())?;
    let wanted: Vec<char> = last_line.chars().filter(|c| !is_chrome(*c)).collect();
    if wanted.is_empty() {
        return None;
    }
    Some(
        wanted[wanted.len().saturating_sub(TAIL_CHARS)..]
            .iter()
            .collect(),
    )
}

/// A line that is only a horizontal rule (a box's top or bottom).
fn is_rule(line: &str) -> bool {
    let drawn: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    drawn.len() >= 10 && drawn.iter().all(|c| matches!(c, '─' | '━' | '═'))
}

/// Whether the last box drawn with rules among the bottom `BOXED_WINDOW`
/// lines, its first line a prompt mark's, holds `typed`; `None` when there
/// is no such box. A prompt echoed into the conversation has no rules
/// around it.
fn in_a_ruled_box(lines: &[&str], typed: &str) -> Option<bool> {
    let tail = typed_tail(typed)?;
    let window = &lines[lines.len().saturating_sub(BOXED_WINDOW)..];
    let rules: Vec<usize> = (0..window.len()).filter(|&i| is_rule(window[i])).collect();
    let (top, bottom) = rules
        .windows(2)
        .rev()
        .map(|w| (w[0], w[1]))
        .find(|&(top, bottom)| {
            bottom > top + 1
                && bottom - top - 1 <= BOX_TEXT_LINES
                && window[top + 1].trim_start().starts_with(['❯', '>', '›'])
        })?;
    let shown: String = window[top + 1..bottom]
        .iter()
        .flat_map(|l| l.chars())
        .filter(|c| !is_chrome(*c))
        .collect();
    Some(shown.contains(&tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_left_in_claudes_box_is_still_in_input() {
        let screen = "Welcome\n\n╭────────────────────╮\n│ > run the tests    │\n╰────────────────────╯\n  ? for shortcuts\n";
        assert!(still_in_input(screen, "run the tests"));
    }

    #[test]
    fn a_prompt_wrapped_over_lines_of_a_narrow_box_is_found_across_them() {
        let screen = "╭──────────╮\n│ > please │\n│ run the  │\n│ tests now│\n╰──────────╯\n";
        assert!(still_in_input(screen, "please run the tests now"));
    }

    #[test]
    fn an_empty_box_after_the_agent_took_the_prompt_is_not() {
        let screen = "> run the tests\n\n✻ Thinking… (esc to interrupt)\n\nline\nline\nline\nline\n╭──────╮\n│ >    │\n╰──────╯\n  ? for shortcuts\n";
        assert!(!still_in_input(screen, "run the tests"));
    }

    #[test]
    fn a_long_paste_shown_as_a_placeholder_is_still_in_input() {
        let screen = "╭──────────────────────────────╮\n│ > [Pasted text #1 +12 lines] │\n╰──────────────────────────────╯\n";
        assert!(still_in_input(screen, "a\nb\nc"));
    }

    #[test]
    fn only_the_end_of_a_long_prompt_need_show() {
        let long = format!("{} the end of it", "x".repeat(400));
        let screen = format!("› …{} the end of it\n  ⏎ send\n", "x".repeat(20));
        assert!(still_in_input(&screen, &long));
    }

    #[test]
    fn a_command_left_in_claudes_box_above_its_command_menu_is_still_in_input() {
        // Claude Code 2.1.197 with `/clear` typed (CI, 2026-12-07): the
        // command list under the box pushed it out of the bottom lines.
        let rule = "─".repeat(60);
        let mut screen =
            format!("❯ earlier prompt\n\n● ANSWER(earlier)\n\n{rule}\n❯ /clear\n{rule}\n");
        for (name, what) in [
            ("/clear", "Clear conversation history and free up context"),
            (
                "/code-review",
                "Review the current diff for correctness bugs",
            ),
            ("", "cleanups at the given effort level"),
            ("/simplify", "Review the changed code for reuse"),
            ("", "then apply the fixes."),
            (
                "/run-skill-generator",
                "Author or improve the run-<unit> skill",
            ),
            ("", "build, launch, and drive this project's app."),
        ] {
            screen.push_str(&format!("{name:30}{what}\n"));
        }
        assert!(still_in_input(&screen, "/clear"));
        // Once taken, the box is empty and the command shows only as echoed.
        let taken =
            format!("❯ /clear\n  ⎿  (no content)\n\n{rule}\n❯ \n{rule}\n  ? for shortcuts\n");
        assert!(!still_in_input(&taken, "/clear"));
    }

    #[test]
    fn a_prompt_echoed_into_the_conversation_is_not_a_ruled_box() {
        let rule = "─".repeat(60);
        let screen =
            format!("❯ run the tests\n\n✻ Thinking…\n\n{rule}\n❯ \n{rule}\n  ? for shortcuts\n");
        let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(in_a_ruled_box(&lines, "run the tests"), Some(false));
        assert!(!still_in_input(&screen, "run the tests"));
    }

    #[test]
    fn nothing_typed_is_never_in_input() {
        assert!(!still_in_input("> \n", ""));
        assert!(!still_in_input("> \n", "  \n "));
    }
}
