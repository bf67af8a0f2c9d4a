//! The rule of `hangar search` and the TUI's search dialog: which lines of
//! which sessions match a query, in what order, and how many are kept.
//!
//! The daemon gathers each session's text (its history and screen from the
//! terminal model or the saved screen, its transcript messages from the
//! provider's files) and calls [`session_matches`] per session, then
//! [`combine`] over all of them. Nothing here reads a file or wakes anything.
//!
//! - A match is plain text (no patterns), smart case as tmux's and
//!   ripgrep's `--smart-case`: case-insensitive unless the query has an
//!   upper-case letter.
//! - Lines are searched as a person would read them: escape sequences and
//!   control characters are removed first ([`clean`]); an excerpt returned
//!   never holds one (DESIGN.md rule 11: transcript text comes from agents).
//! - In a session, the most recent text comes first: the screen from its
//!   bottom row up, then history from its newest line back, then the
//!   transcript from its last message back.
//! - Caps: at most `per_session` matches of one session and `total` in all;
//!   the total is dealt round-robin over the sessions in the order given, so
//!   a capped result still names as many sessions as it can. Whatever a cap
//!   drops is reported (`truncated`), never silently lost.

use std::borrow::Cow;

use crate::display::is_terminal_unsafe;

/// Matches kept per session when the caller says nothing.
pub const DEFAULT_PER_SESSION: usize = 20;
/// Matches kept in all when the caller says nothing.
pub const DEFAULT_TOTAL: usize = 200;
/// The longest excerpt returned, in characters: a minified file printed on
/// one line must not come back whole.
pub const EXCERPT_CHARS: usize = 160;

/// Where a matching line was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Screen,
    History,
    Transcript,
}

impl Source {
    /// The permanent name in replies (`--json`'s `source`).
    pub fn name(self) -> &'static str {
        match self {
            Source::Screen => "screen",
            Source::History => "history",
            Source::Transcript => "transcript",
        }
    }
}

/// A query ready to match lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    needle: String,
    fold: bool,
}

impl Query {
    /// `None` for a query that matches nothing useful: empty, or only
    /// characters [`clean`] removes.
    pub fn new(text: &str) -> Option<Query> {
        let cleaned = clean(text);
        if cleaned.is_empty() {
            return None;
        }
        let fold = !cleaned.chars().any(char::is_uppercase);
        let needle = if fold {
            fold_case(&cleaned)
        } else {
            cleaned.into_owned()
        };
        Some(Query { needle, fold })
    }

    /// Whether upper and lower case are told apart (the query has an
    /// upper-case letter).
    pub fn case_sensitive(&self) -> bool {
        !self.fold
    }

    /// The first match in an already [`clean`] line, as a character
    /// offset and a length in characters of `line`.
    pub fn find(&self, line: &str) -> Option<(usize, usize)> {
        if !self.fold {
            let byte = line.find(&self.needle)?;
            let start = line[..byte].chars().count();
            return Some((start, self.needle.chars().count()));
        }
        if line.is_ascii() {
            // The common case, without building a folded copy: an ASCII
            // line can only hold an ASCII needle, and ASCII folds byte by
            // byte.
            let (hay, needle) = (line.as_bytes(), self.needle.as_bytes());
            if !self.needle.is_ascii() || needle.len() > hay.len() {
                return None;
            }
            let at = hay
                .windows(needle.len())
                .position(|w| w.eq_ignore_ascii_case(needle))?;
            return Some((at, needle.len()));
        }
        // Lower-casing may change a character's length ('İ' is two), so the
        // folded line keeps, per folded byte, the character it came from.
        let mut folded = String::with_capacity(line.len());
        let mut origin = Vec::with_capacity(line.len());
        for (i, c) in line.chars().enumerate() {
            for l in c.to_lowercase() {
                folded.push(l);
                origin.extend(std::iter::repeat_n(i, l.len_utf8()));
            }
        }
        let byte = folded.find(&self.needle)?;
        let start = origin[byte];
        let last = origin[byte + self.needle.len() - 1];
        Some((start, last + 1 - start))
    }
}

fn fold_case(text: &str) -> String {
    text.chars().flat_map(char::to_lowercase).collect()
}

/// `line` with every escape sequence (CSI, OSC, DCS and the other string
/// sequences, two-byte ESC sequences, their C1 forms) and every other
/// terminal-unsafe character removed; a tab becomes a space.
pub fn clean(line: &str) -> Cow<'_, str> {
    let printable_ascii = |b: &u8| (0x20..0x7f).contains(b);
    if line.bytes().all(|b| printable_ascii(&b)) || !line.chars().any(is_terminal_unsafe) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let introducer = match c {
            '\x1b' => match chars.next() {
                Some('[') => Some('['),
                Some(']') => Some(']'),
                Some(s @ ('P' | 'X' | '^' | '_')) => Some(s),
                // A two-byte sequence (ESC 7, ESC c, ...): both go.
                Some(_) | None => None,
            },
            '\u{9b}' => Some('['),
            '\u{9d}' => Some(']'),
            '\u{90}' => Some('P'),
            '\u{98}' => Some('X'),
            '\u{9e}' => Some('^'),
            '\u{9f}' => Some('_'),
            '\t' => {
                out.push(' ');
                continue;
            }
            c if is_terminal_unsafe(c) => continue,
            c => {
                out.push(c);
                continue;
            }
        };
        match introducer {
            // CSI: parameters and intermediates up to a final byte.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \ or
            // U+009C).
            Some(_) => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || c == '\u{9c}' {
                        break;
                    }
                    if c == '\x1b' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            None => {}
        }
    }
    Cow::Owned(out)
}

/// One matching line as a person is shown it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub source: Source,
    /// 1-based: the row of the screen, the line of history counting from
    /// its oldest kept line, or the message of the transcript.
    pub line: usize,
    /// The line, cleaned, cut to about [`EXCERPT_CHARS`] around the match
    /// (a cut side ends in `…`).
    pub text: String,
    /// Where the match starts in `text`, in characters.
    pub column: usize,
    /// The match's length in characters.
    pub length: usize,
}

/// A session's text to search, each source oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionText {
    pub screen: Vec<String>,
    pub history: Vec<String>,
    /// Whole messages; a message of several lines is searched line by line.
    pub transcript: Vec<String>,
}

/// The matches of one session, most recent first, at most `per_session`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionMatches {
    pub found: Vec<Found>,
    /// More lines matched than `per_session`.
    pub capped: bool,
}

/// Search one session's text (see the module doc for the order).
pub fn session_matches(query: &Query, text: &SessionText, per_session: usize) -> SessionMatches {
    let screen = text
        .screen
        .iter()
        .enumerate()
        .rev()
        .map(|(i, l)| (Source::Screen, i + 1, l.as_str()));
    let history = text
        .history
        .iter()
        .enumerate()
        .rev()
        .map(|(i, l)| (Source::History, i + 1, l.as_str()));
    let transcript = text.transcript.iter().enumerate().rev().flat_map(|(i, m)| {
        let lines: Vec<&str> = m.lines().collect();
        lines
            .into_iter()
            .rev()
            .map(move |l| (Source::Transcript, i + 1, l))
    });
    let mut out = SessionMatches::default();
    for (source, line, raw) in screen.chain(history).chain(transcript) {
        let cleaned = clean(raw);
        let Some((start, length)) = query.find(&cleaned) else {
            continue;
        };
        if out.found.len() == per_session {
            out.capped = true;
            break;
        }
        let (text, column) = excerpt(&cleaned, start, length);
        out.found.push(Found {
            source,
            line,
            text,
            column,
            length,
        });
    }
    out
}

/// `line` cut to about [`EXCERPT_CHARS`] characters with the match
/// (`start`, `length`) inside, and where the match now starts.
fn excerpt(line: &str, start: usize, length: usize) -> (String, usize) {
    let total = line.chars().count();
    if total <= EXCERPT_CHARS {
        return (line.to_owned(), start);
    }
    // Context before the match: a third of what the match leaves room for.
    let room = EXCERPT_CHARS.saturating_sub(length);
    let from = start.saturating_sub(room / 3);
    let to = (from + EXCERPT_CHARS.max(length)).min(total);
    let from = to.saturating_sub(EXCERPT_CHARS.max(length)).min(from);
    let mut text = String::new();
    let mut column = start - from;
    if from > 0 {
        text.push(crate::display::TRUNCATED);
        column += 1;
    }
    text.extend(line.chars().skip(from).take(to - from));
    if to < total {
        text.push(crate::display::TRUNCATED);
    }
    (text, column)
}

/// Every session's matches combined under the total cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combined<K> {
    /// Grouped by session in the order given, each session's most recent
    /// first.
    pub matches: Vec<(K, Found)>,
    /// A cap (per session or total) dropped a match.
    pub truncated: bool,
}

/// Keep at most `total` matches, dealt one per session per round in the
/// order given, so that with more matching sessions than `total` each kept
/// match is a different session.
pub fn combine<K: Clone>(sessions: Vec<(K, SessionMatches)>, total: usize) -> Combined<K> {
    let available: usize = sessions.iter().map(|(_, m)| m.found.len()).sum();
    let mut truncated = sessions.iter().any(|(_, m)| m.capped) || available > total;
    let mut take = vec![0usize; sessions.len()];
    let mut kept = 0;
    let mut round = 0;
    while kept < total.min(available) {
        for (i, (_, m)) in sessions.iter().enumerate() {
            if kept == total {
                break;
            }
            if m.found.len() > round {
                take[i] += 1;
                kept += 1;
            }
        }
        round += 1;
    }
    let mut matches = Vec::with_capacity(kept);
    for ((key, m), n) in sessions.into_iter().zip(take) {
        matches.extend(m.found.into_iter().take(n).map(|f| (key.clone(), f)));
    }
    truncated |= matches.len() < available;
    Combined { matches, truncated }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn q(s: &str) -> Query {
        Query::new(s).unwrap()
    }

    fn text(screen: &[&str], history: &[&str], transcript: &[&str]) -> SessionText {
        let v = |s: &[&str]| s.iter().map(|l| l.to_string()).collect();
        SessionText {
            screen: v(screen),
            history: v(history),
            transcript: v(transcript),
        }
    }

    #[test]
    fn a_lower_case_query_ignores_case_and_an_upper_case_letter_makes_it_exact() {
        assert!(!q("needle").case_sensitive());
        assert_eq!(q("needle").find("a NeEdLe here"), Some((2, 6)));
        assert!(q("Needle").case_sensitive());
        assert_eq!(q("Needle").find("a needle here"), None);
        assert_eq!(q("Needle").find("a Needle here"), Some((2, 6)));
    }

    #[test]
    fn a_match_after_a_letter_that_lower_cases_longer_is_placed_on_its_own_characters() {
        // 'İ' lower-cases to "i̇" (two characters).
        assert_eq!(q("x").find("İİx"), Some((2, 1)));
        assert_eq!(q("i̇").find("aİb"), Some((1, 1)));
    }

    #[test]
    fn an_empty_or_control_only_query_is_no_query() {
        assert_eq!(Query::new(""), None);
        assert_eq!(Query::new("\x1b[31m\x07"), None);
    }

    #[test]
    fn escape_sequences_and_controls_are_removed_and_what_they_split_still_matches() {
        assert_eq!(clean("plain"), Cow::Borrowed("plain"));
        assert_eq!(clean("ne\x1b[1;31medle\x1b[0m"), "needle");
        assert_eq!(clean("a\x1b]0;evil title\x07b"), "ab");
        assert_eq!(clean("a\x1b]52;c;aGk=\x1b\\b"), "ab");
        assert_eq!(clean("a\x1bPq#0;1\x1b\\b"), "ab");
        assert_eq!(clean("a\u{9b}2Jb\u{202e}c\rd\te\x7f"), "abcd e");
        assert_eq!(clean("\x1bcreset"), "reset");
        assert_eq!(clean("cut at the end \x1b[31"), "cut at the end ");
        assert_eq!(q("needle").find(&clean("ne\x1b[1medle")), Some((0, 6)));
    }

    #[test]
    fn the_screen_from_the_bottom_comes_first_then_history_then_the_transcript() {
        let t = text(
            &["w1 screen top", "w1 screen bottom"],
            &["w1 old", "w1 new"],
            &["w1 first message", "one\nw1 second message"],
        );
        let m = session_matches(&q("w1"), &t, 100);
        let got: Vec<(Source, usize, &str)> = m
            .found
            .iter()
            .map(|f| (f.source, f.line, f.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Source::Screen, 2, "w1 screen bottom"),
                (Source::Screen, 1, "w1 screen top"),
                (Source::History, 2, "w1 new"),
                (Source::History, 1, "w1 old"),
                (Source::Transcript, 2, "w1 second message"),
                (Source::Transcript, 1, "w1 first message"),
            ]
        );
        assert!(!m.capped);
    }

    #[test]
    fn a_session_with_more_matches_than_its_cap_keeps_the_newest_and_says_so() {
        let history: Vec<String> = (1..=50).map(|i| format!("hit {i}")).collect();
        let t = SessionText {
            history,
            ..Default::default()
        };
        let m = session_matches(&q("hit"), &t, 3);
        assert!(m.capped);
        let lines: Vec<usize> = m.found.iter().map(|f| f.line).collect();
        assert_eq!(lines, vec![50, 49, 48]);
        let exact = session_matches(&q("hit"), &t, 50);
        assert!(!exact.capped, "exactly the cap is not capped");
    }

    #[test]
    fn a_long_line_is_cut_around_its_match_and_the_column_follows() {
        let line = format!("{}needle{}", "a".repeat(500), "b".repeat(500));
        let t = text(&[&line], &[], &[]);
        let f = &session_matches(&q("needle"), &t, 1).found[0];
        assert!(f.text.chars().count() <= EXCERPT_CHARS + 2, "{}", f.text);
        assert!(f.text.starts_with('…') && f.text.ends_with('…'));
        let marked: String = f.text.chars().skip(f.column).take(f.length).collect();
        assert_eq!(marked, "needle");
    }

    #[test]
    fn the_total_is_dealt_round_robin_so_more_sessions_are_named() {
        let t = SessionText {
            history: (0..10).map(|i| format!("x{i}")).collect(),
            ..Default::default()
        };
        let sessions: Vec<(u32, SessionMatches)> = (0..4)
            .map(|k| (k, session_matches(&q("x"), &t, 10)))
            .collect();
        let c = combine(sessions, 6);
        let keys: Vec<u32> = c.matches.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, vec![0, 0, 1, 1, 2, 3]);
        assert!(c.truncated);
    }

    fn session_strategy() -> impl Strategy<Value = SessionText> {
        let line = prop::collection::vec(
            prop_oneof![
                Just("x".to_owned()),
                Just("X".to_owned()),
                Just("\x1b[1m".to_owned()),
                Just("\x1b]0;t\x07".to_owned()),
                Just("\n".to_owned()),
                "[a-z ]{0,4}",
                any::<char>().prop_map(String::from),
            ],
            0..8,
        )
        .prop_map(|parts| parts.concat());
        let lines = prop::collection::vec(line, 0..12);
        (lines.clone(), lines.clone(), lines).prop_map(|(screen, history, transcript)| {
            SessionText {
                screen,
                history,
                transcript,
            }
        })
    }

    proptest! {
        #[test]
        fn caps_hold_and_truncated_says_exactly_when_something_was_dropped(
            sessions in prop::collection::vec(session_strategy(), 0..6),
            per in 0usize..6,
            total in 0usize..15,
        ) {
            let query = q("x");
            let unlimited: Vec<usize> = sessions
                .iter()
                .map(|t| session_matches(&query, t, usize::MAX).found.len())
                .collect();
            let each: Vec<(usize, SessionMatches)> = sessions
                .iter()
                .enumerate()
                .map(|(i, t)| (i, session_matches(&query, t, per)))
                .collect();
            for (i, m) in &each {
                prop_assert!(m.found.len() <= per);
                prop_assert_eq!(m.capped, unlimited[*i] > per);
            }
            let c = combine(each, total);
            prop_assert!(c.matches.len() <= total);
            for i in 0..sessions.len() {
                prop_assert!(c.matches.iter().filter(|(k, _)| *k == i).count() <= per);
            }
            let everything: usize = unlimited.iter().sum();
            prop_assert_eq!(c.truncated, c.matches.len() < everything);
            // Grouped by session, in the order given.
            prop_assert!(c.matches.windows(2).all(|w| w[0].0 <= w[1].0));
        }

        #[test]
        fn every_excerpt_is_clean_and_its_marked_part_matches_the_query(
            t in session_strategy(),
        ) {
            for query in [q("x"), q("X")] {
                for f in session_matches(&query, &t, usize::MAX).found {
                    prop_assert!(!f.text.chars().any(is_terminal_unsafe), "{:?}", f.text);
                    let marked: String = f.text.chars().skip(f.column).take(f.length).collect();
                    prop_assert!(query.find(&marked).is_some(), "{:?} in {:?}", marked, f.text);
                }
            }
        }

        #[test]
        fn an_ascii_line_is_matched_as_lower_casing_both_would(
            line in "[a-zA-Z ]{0,30}",
            needle in "[a-z]{1,3}",
        ) {
            let expected = line.to_lowercase().find(&needle).map(|at| (at, needle.len()));
            prop_assert_eq!(q(&needle).find(&line), expected);
            // The same line with one non-ASCII letter in front goes the
            // folding way and finds the same place, one character on.
            let wide = format!("é{line}");
            prop_assert_eq!(q(&needle).find(&wide), expected.map(|(at, n)| (at + 1, n)));
        }

        #[test]
        fn clean_never_leaves_an_unsafe_character(s in any::<String>()) {
            prop_assert!(!clean(&s).chars().any(is_terminal_unsafe));
        }
    }
}
