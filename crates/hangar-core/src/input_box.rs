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
/// across wrapping, or the agent's placeholder for a paste.
pub fn still_in_input(screen: &str, typed: &str) -> bool {
    let bottom: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let bottom = &bottom[bottom.len().saturating_sub(INPUT_WINDOW)..];
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
    fn nothing_typed_is_never_in_input() {
        assert!(!still_in_input("> \n", ""));
        assert!(!still_in_input("> \n", "  \n "));
    }
}
