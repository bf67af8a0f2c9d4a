//! Whether a request an agent sent to its model carries a prompt hangar
//! typed into it.
//!
//! Where the agent's own record of a turn cannot be read (an engine's
//! container holds its hooks and transcript), the request that carries the
//! prompt is the proof the agent took it. Any request will not do: a CLI
//! sends requests of its own when it starts or wakes (Claude Code's quota
//! and title requests), and one of those arriving after the Enter passed
//! for the turn while the prompt still sat in the box (CI, issue 44). The
//! proxy keeps a fingerprint of each text in a request's trailing user
//! messages; a prompt is carried when one of them is the prompt's, or ends
//! with it after a space.

/// How many characters of a text's end a fingerprint keeps: enough to tell
/// prompts apart, little to keep per request.
pub const FINGERPRINT_CHARS: usize = 256;

/// A text's fingerprint: its words, each run of whitespace one space (a CLI
/// may trim the prompt or turn a paste's line ends into others), the last
/// [`FINGERPRINT_CHARS`] characters of them.
pub fn fingerprint(text: &str) -> String {
    let words: Vec<char> = text
        .split_whitespace()
        .flat_map(|w| std::iter::once(' ').chain(w.chars()))
        .skip(1)
        .collect();
    words[words.len().saturating_sub(FINGERPRINT_CHARS)..]
        .iter()
        .collect()
}

/// Whether a request whose user texts have the fingerprints `request`
/// carries the prompt `typed`: one of them is the prompt's, or ends with it
/// after a space (GitHub Copilot CLI puts its date before a prompt, never
/// after). A prompt of nothing but whitespace is carried by nothing.
pub fn carries(request: &[String], typed: &str) -> bool {
    let wanted = fingerprint(typed);
    if wanted.is_empty() {
        return false;
    }
    let after_space = format!(" {wanted}");
    request
        .iter()
        .any(|text| *text == wanted || text.ends_with(&after_space))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prints(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| fingerprint(t)).collect()
    }

    #[test]
    fn the_turns_own_text_carries_the_prompt_however_its_white_space_came_back() {
        let request = prints(&[
            "<system-reminder>ctx</system-reminder>",
            "run the\r\ntests  ",
        ]);
        assert!(carries(&request, "run the\ntests"));
    }

    #[test]
    fn a_side_request_of_the_cli_does_not() {
        // What Claude Code sends on its own as it starts: no prompt in it.
        assert!(!carries(&prints(&["quota"]), "after the wake"));
        // A short prompt that only ends another word is not it.
        assert!(!carries(&prints(&["quota"]), "a"));
        assert!(!carries(&prints(&["yes, and more"]), "yes"));
    }

    #[test]
    fn a_date_put_before_the_prompt_still_carries_it() {
        let request = prints(&["<current_datetime>2026-12-07</current_datetime>\n\nfix it"]);
        assert!(carries(&request, "fix it"));
    }

    #[test]
    fn a_long_paste_is_matched_by_its_end() {
        let long: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        assert!(carries(&prints(&[&long]), &long));
        let other = format!("{long}one more");
        assert!(!carries(&prints(&[&long]), &other));
    }

    #[test]
    fn a_blank_prompt_is_carried_by_nothing() {
        assert!(!carries(&prints(&["anything"]), " \n"));
    }
}
