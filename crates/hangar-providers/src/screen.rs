//! The last resort: a permission prompt recognised on the screen.
//!
//! Every pattern lives in its CLI's adapter (`Adapter::permission_prompts`),
//! those of every provider here, each with a test.
//! A prompt only counts while it is *open*: it must be near the bottom of the
//! screen with nothing under it but its choices and hints. Without that rule
//! an answered prompt still on screen (scrolled up by a line or two) kept a
//! session "waiting" forever. This source never says anything but `Waiting`.

use hangar_core::Provider;

/// The patterns of every provider, custom ones included (case-sensitive
/// substrings of one screen line); each CLI's own are its adapter's
/// (`Adapter::permission_prompts`).
pub const ANY_PROVIDER_PROMPTS: &[&str] = &["Do you want to allow"];

/// Every pattern that counts for `provider`.
pub fn prompts_of(provider: &Provider) -> impl Iterator<Item = &'static str> {
    crate::adapter::adapter(provider)
        .permission_prompts()
        .iter()
        .chain(ANY_PROVIDER_PROMPTS)
        .copied()
}

/// How many non-blank lines from the bottom a prompt may sit.
const PROMPT_WINDOW: usize = 12;

/// A line that may sit under an open prompt: a numbered choice (`❯ 1. Yes`,
/// `2) No`), a box border, or a key hint.
fn is_choice_or_chrome(line: &str) -> bool {
    let t = line
        .trim()
        .trim_start_matches(['❯', '›', '>', '│', '┃', '|', '•', '*', ' ']);
    if t.is_empty() {
        return true;
    }
    let mut chars = t.chars();
    let digit = chars.next().is_some_and(|c| c.is_ascii_digit());
    if digit && matches!(chars.next(), Some('.' | ')')) {
        return true;
    }
    if t.starts_with(['╭', '╰', '─', '┌', '└', '━']) {
        return true;
    }
    let lower = t.to_ascii_lowercase();
    lower.contains("esc to")
        || lower.contains("enter to")
        || lower.starts_with("allow once")
        || lower.starts_with("always allow")
        || lower.starts_with("reject")
        || lower.starts_with("yes")
        || lower.starts_with("no,")
        || lower == "no"
}

/// Whether `screen` shows an open permission prompt of `provider`.
pub fn permission_prompt_open(provider: &Provider, screen: &str) -> bool {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let bottom = &lines[lines.len().saturating_sub(PROMPT_WINDOW)..];
    for (i, line) in bottom.iter().enumerate().rev() {
        let is_prompt = prompts_of(provider).any(|pattern| line.contains(pattern));
        if is_prompt {
            return bottom[i + 1..].iter().all(|l| is_choice_or_chrome(l));
        }
        if !is_choice_or_chrome(line) {
            // Something that is neither a choice nor a hint sits above every
            // prompt still to find: any prompt higher up was answered.
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_in_the_table_is_recognised_for_its_provider() {
        let custom = Provider::Custom("aider".into());
        for provider in [
            Provider::Claude,
            Provider::Codex,
            Provider::Opencode,
            custom,
        ] {
            for pattern in prompts_of(&provider) {
                let screen = format!("> run it\n{pattern}\n❯ 1. Yes\n  2. No\n");
                assert!(permission_prompt_open(&provider, &screen), "{pattern}");
            }
        }
    }

    #[test]
    fn the_fake_agents_prompt_is_open_until_answered() {
        let open = "fake-agent claude session x\n> permission Bash\nDo you want to allow Bash?\n❯ 1. Yes\n  2. No\n\n\n";
        assert!(permission_prompt_open(&Provider::Claude, open));
        let answered = format!("{open}1\nallowed\n> ");
        assert!(!permission_prompt_open(&Provider::Claude, &answered));
    }

    #[test]
    fn a_claude_prompt_in_a_box_with_hints_is_open() {
        let screen = "╭──────────────╮\n│ Bash command │\n│ Do you want to proceed? │\n│ ❯ 1. Yes │\n│   2. Yes, and don't ask again │\n│   3. No, and tell Claude what to do differently (esc) │\n╰──────────────╯\n  Esc to cancel\n";
        assert!(permission_prompt_open(&Provider::Claude, screen));
    }

    #[test]
    fn a_codex_pattern_does_not_count_for_claude() {
        let screen = "Allow command?\n› 1. Yes, proceed\n";
        assert!(permission_prompt_open(&Provider::Codex, screen));
        assert!(!permission_prompt_open(&Provider::Claude, screen));
    }

    #[test]
    fn a_screen_without_a_prompt_is_not_waiting() {
        assert!(!permission_prompt_open(&Provider::Claude, ""));
        assert!(!permission_prompt_open(
            &Provider::Claude,
            "> hi\nanswer: hi\n> "
        ));
    }
}
