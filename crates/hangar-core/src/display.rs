//! Showing untrusted text to a person (DESIGN.md rule 11).
//!
//! Titles, tab names, folder names, transcript and tool text, capture data
//! and error details come from agents, models and files. A terminal obeys
//! any control sequence in what it is given: `ESC ] 2 ; ... BEL` retitles
//! the window, `ESC [ 2 J` clears the screen, `ESC ] 52 ; c ; ...` writes
//! the clipboard, a bidi override makes text read differently from what it
//! is. Every human output of hangar passes such text through this module
//! first; the data itself is stored and sent (`--json`) unchanged.
//!
//! One notation, as `ls` and `git` show unprintable names do, chosen so a
//! person can read it and tell any two names apart. It is Rust's own
//! `{:?}` notation (without the quotes), which the daemon's messages
//! already use when they quote what they were given, so every escape
//! hangar prints reads the same:
//!
//! | character | shown as |
//! | --- | --- |
//! | backslash (names only) | `\\` |
//! | newline, carriage return, tab (names only), NUL | `\n`, `\r`, `\t`, `\0` |
//! | ESC, any other C0 control, DEL | `\u{1b}`, `\u{7}`, `\u{7f}` |
//! | C1 controls (U+0080-U+009F) | `\u{9b}` |
//! | bidi controls (U+061C, U+200E/F, U+202A-202E, U+2066-2069), line and paragraph separators (U+2028/9) | `\u{202e}` |
//! | Unicode tag characters (U+E0000-E007F) outside an emoji flag | `\u{e0041}` |
//! | a byte that is not UTF-8 (paths) | `\xFF` (as Rust shows a path) |
//!
//! Two flavours: [`name`] for one-line fields (titles, tab names, paths,
//! ids, reasons) escapes every line break and doubles the backslash, so the
//! escaped form maps back to exactly one original; [`body`] for multi-line
//! text a person reads (transcript messages, captured model output, a
//! screen) keeps newlines, tabs and backslashes as they are, so code stays
//! readable, and escapes everything else the same way.
//!
//! Printable text (letters of every script, emoji, zero-width joiners in
//! emoji and in scripts that need them) is shown as it is.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use unicode_width::UnicodeWidthChar;

/// The marker that ends a value shortened for display.
pub const TRUNCATED: char = '…';

/// BLACK FLAG: the base of the emoji subdivision flags (England, Scotland,
/// Wales), the one harmless use of tag characters.
const BLACK_FLAG: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';

/// Bidi controls: embeddings, overrides, isolates and the implicit marks.
/// Each can make a line display in an order other than the one it has.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

fn is_tag(c: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// Whether `c` may not reach a terminal raw: a control character (C0, DEL,
/// C1), a bidi control, a line or paragraph separator, or a tag character.
pub fn is_terminal_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c) || matches!(c, '\u{2028}' | '\u{2029}') || is_tag(c)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Name,
    Body,
}

/// `text` as one line a person can read and tell from any other.
pub fn name(text: &str) -> Cow<'_, str> {
    escape(text, Flavour::Name)
}

/// Multi-line `text` for reading: newlines, tabs and backslashes kept.
pub fn body(text: &str) -> Cow<'_, str> {
    escape(text, Flavour::Body)
}

/// Bytes that should be UTF-8 but may not be (a folder name): as [`name`],
/// with each byte that is not part of valid UTF-8 shown as `\xNN`.
pub fn name_bytes(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => name(text),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                out.push_str(&name(chunk.valid()));
                for b in chunk.invalid() {
                    let _ = write!(out, "\\x{b:02X}");
                }
            }
            Cow::Owned(out)
        }
    }
}

/// A path as [`name_bytes`] shows it: never lossily merged into another.
pub fn path(p: &Path) -> Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    name_bytes(p.as_os_str().as_bytes())
}

/// [`name`], shortened to at most `max_cols` terminal columns: a value cut
/// short ends in [`TRUNCATED`]. An escape is never cut in the middle.
pub fn name_fit(text: &str, max_cols: usize) -> Cow<'_, str> {
    let escaped = name(text);
    if width(&escaped) <= max_cols {
        return escaped;
    }
    let room = max_cols.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for unit in units(text, Flavour::Name) {
        let w = width(&unit);
        if used + w > room {
            break;
        }
        used += w;
        out.push_str(&unit);
    }
    if max_cols > 0 {
        out.push(TRUNCATED);
    }
    Cow::Owned(out)
}

/// Terminal columns of already escaped text.
pub fn width(escaped: &str) -> usize {
    escaped.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `escaped` padded with spaces to `cols` columns (`format!("{:<n}")`
/// counts chars, not columns, and so misaligns wide letters).
pub fn pad(escaped: &str, cols: usize) -> String {
    let w = width(escaped);
    let mut out = escaped.to_owned();
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(w)));
    out
}

/// A JSON document (as serde_json writes it) with every terminal-unsafe
/// character inside its strings written as a `\uXXXX` escape. serde_json
/// escapes C0 controls only; DEL, C1 controls and bidi controls would
/// otherwise reach a terminal raw. The document means exactly the same.
/// A newline is kept: serde_json escapes every one inside a string, so a
/// raw one is the layout of a pretty document.
pub fn json(doc: &str) -> Cow<'_, str> {
    let unsafe_in_json = |c: char| c != '\n' && is_terminal_unsafe(c);
    // Printable ASCII and newlines (most documents, and a megabyte of
    // patch) are seen a byte at a time; anything else a character at a time.
    let plain_ascii = |b: &u8| matches!(b, b' '..=b'~' | b'\n');
    if doc.as_bytes().iter().all(plain_ascii) || !doc.chars().any(unsafe_in_json) {
        return Cow::Borrowed(doc);
    }
    let mut out = String::with_capacity(doc.len() + 16);
    for c in doc.chars() {
        if unsafe_in_json(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn escape(text: &str, flavour: Flavour) -> Cow<'_, str> {
    let plain = |c: char| match c {
        '\\' | '\n' | '\t' => flavour == Flavour::Body,
        c => !is_terminal_unsafe(c),
    };
    if text.chars().all(plain) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(units(text, flavour).collect())
}

/// `text` as display units: a printable character (or a whole emoji tag
/// flag) as it is, or the escape standing for one character.
fn units(text: &str, flavour: Flavour) -> impl Iterator<Item = Cow<'_, str>> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let mut chars = rest.chars();
        let c = chars.next()?;
        let len = if c == BLACK_FLAG {
            c.len_utf8() + flag_tags_len(chars.as_str())
        } else {
            c.len_utf8()
        };
        let (unit, tail) = rest.split_at(len);
        rest = tail;
        if len > c.len_utf8() {
            return Some(Cow::Borrowed(unit));
        }
        Some(escape_char(c, unit, flavour, &mut rest))
    })
}

/// How many bytes of tag characters after a black flag make an emoji
/// subdivision flag: at least one tag letter, then CANCEL TAG. Zero when
/// they do not (the tags are then escaped like any other).
fn flag_tags_len(after: &str) -> usize {
    let mut len = 0;
    for c in after.chars() {
        if c == CANCEL_TAG {
            return if len > 0 { len + c.len_utf8() } else { 0 };
        }
        if ('\u{E0020}'..'\u{E007F}').contains(&c) {
            len += c.len_utf8();
        } else {
            return 0;
        }
    }
    0
}

fn escape_char<'a>(c: char, unit: &'a str, flavour: Flavour, rest: &mut &'a str) -> Cow<'a, str> {
    let body = flavour == Flavour::Body;
    match c {
        '\\' if !body => Cow::Borrowed("\\\\"),
        '\n' if !body => Cow::Borrowed("\\n"),
        '\t' if !body => Cow::Borrowed("\\t"),
        // CRLF ends a line in a body: shown as the line break it is.
        '\r' if body && rest.starts_with('\n') => {
            *rest = &rest[1..];
            Cow::Borrowed("\n")
        }
        '\r' => Cow::Borrowed("\\r"),
        '\n' | '\t' | '\\' => Cow::Borrowed(unit),
        '\0' => Cow::Borrowed("\\0"),
        c if is_terminal_unsafe(c) => Cow::Owned(format!("\\u{{{:x}}}", c as u32)),
        _ => Cow::Borrowed(unit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The inverse of [`name_bytes`]; it exists to prove that two names are
    /// never shown alike.
    fn unescape(shown: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut chars = shown.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            let push = |out: &mut Vec<u8>, c: char| {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            };
            match chars.next().expect("an escape has a letter") {
                '\\' => out.push(b'\\'),
                'n' => out.push(b'\n'),
                'r' => out.push(b'\r'),
                't' => out.push(b'\t'),
                '0' => out.push(0),
                'x' => {
                    let hex: String = chars.by_ref().take(2).collect();
                    out.push(u8::from_str_radix(&hex, 16).expect("two hex digits"));
                }
                'u' => {
                    assert_eq!(chars.next(), Some('{'));
                    let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    let code = u32::from_str_radix(&hex, 16).expect("hex");
                    push(&mut out, char::from_u32(code).expect("a char"));
                }
                other => panic!("unknown escape \\{other}"),
            }
        }
        out
    }

    /// Strings made mostly of the characters that matter here.
    fn hostile() -> impl Strategy<Value = String> {
        let pieces = prop_oneof![
            Just("\x1b]2;pwned\x07".to_owned()),
            Just("\x1b[2J".to_owned()),
            Just("\x1b]52;c;aGVsbG8=\x07".to_owned()),
            Just("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\".to_owned()),
            Just("\x1bP+q544e\x1b\\".to_owned()),
            Just("\u{9b}31m\u{90}dcs\u{9c}".to_owned()),
            Just("\u{202e}gnp.exe\u{202c}".to_owned()),
            Just("\u{2066}\u{2069}\u{200e}\u{200f}\u{061c}".to_owned()),
            Just("👩\u{200d}💻 é ñ 日本 \\ \r\n \t".to_owned()),
            Just("\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}".to_owned()),
            Just("\u{E0041}\u{E0042}\u{2028}\u{2029}".to_owned()),
            any::<char>().prop_map(String::from),
            "[\\x00-\\x20\\x7f-\\x{a0}]{1,4}",
            "\\PC{0,6}",
        ];
        prop::collection::vec(pieces, 0..12).prop_map(|v| v.concat())
    }

    /// No unsafe character but `allowed` ones, and tag characters only in
    /// a flag: after a black flag, up to its cancel tag.
    fn no_unsafe(shown: &str, allowed: &[char]) -> bool {
        let mut in_flag = false;
        shown.chars().all(|c| {
            let ok = allowed.contains(&c) || !is_terminal_unsafe(c) || (in_flag && is_tag(c));
            in_flag = (c == BLACK_FLAG || (in_flag && is_tag(c))) && c != CANCEL_TAG;
            ok
        })
    }

    proptest! {
        #[test]
        fn a_name_never_holds_a_control_or_bidi_character(s in hostile()) {
            let shown = name(&s);
            prop_assert!(no_unsafe(&shown, &[]), "{shown:?}");
            prop_assert!(!shown.contains('\n'));
        }

        #[test]
        fn a_name_maps_back_to_exactly_the_original(s in hostile()) {
            prop_assert_eq!(unescape(&name(&s)), s.as_bytes());
        }

        #[test]
        fn bytes_that_are_not_utf8_map_back_too(
            bytes in prop::collection::vec(any::<u8>(), 0..40)
        ) {
            let shown = name_bytes(&bytes);
            prop_assert!(no_unsafe(&shown, &[]), "{shown:?}");
            prop_assert_eq!(unescape(&shown), bytes);
        }

        #[test]
        fn a_body_keeps_only_newlines_and_tabs(s in hostile()) {
            let shown = body(&s);
            prop_assert!(no_unsafe(&shown, &['\n', '\t']), "{shown:?}");
        }

        #[test]
        fn printable_text_stays_as_it_is(s in "[\\p{L}\\p{N}\\p{So} .,:/_-]{0,40}") {
            prop_assert_eq!(name(&s), s.as_str());
            prop_assert_eq!(body(&s), s.as_str());
        }

        #[test]
        fn a_fitted_name_is_a_prefix_within_its_width(s in hostile(), cols in 1usize..60) {
            let full = name(&s);
            let fitted = name_fit(&s, cols);
            prop_assert!(width(&fitted) <= cols, "{fitted:?} wider than {cols}");
            prop_assert!(no_unsafe(&fitted, &[]));
            match fitted.strip_suffix(TRUNCATED) {
                Some(head) if fitted != full => prop_assert!(full.starts_with(head)),
                _ => prop_assert_eq!(&fitted, &full),
            }
        }

        #[test]
        fn json_means_the_same_and_holds_no_unsafe_character(s in hostile()) {
            let value = serde_json::json!({"title": s, "nested": [{"cwd": s}]});
            let compact = serde_json::to_string(&value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            for doc in [compact, pretty] {
                let safe = json(&doc);
                prop_assert!(no_unsafe(&safe, &['\n']), "{safe:?}");
                let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
                prop_assert_eq!(&back, &value);
            }
        }
    }

    #[test]
    fn escapes_read_as_documented() {
        assert_eq!(name("\x1b]2;pwned\x07"), "\\u{1b}]2;pwned\\u{7}");
        assert_eq!(name("\x1b[2J"), "\\u{1b}[2J");
        assert_eq!(name("a\u{9b}b\u{7f}\0"), "a\\u{9b}b\\u{7f}\\0");
        assert_eq!(name("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        assert_eq!(name("C:\\dir\nnext\ttab"), "C:\\\\dir\\nnext\\ttab");
        assert_eq!(
            body("printf(\"hi\\n\");\r\n\tok\rover"),
            "printf(\"hi\\n\");\n\tok\\rover"
        );
        assert_eq!(name_bytes(b"caf\xc3\xa9-\xff\xfe"), "café-\\xFF\\xFE");
        assert_eq!(name_bytes(b"a\xff"), "a\\xFF");
        assert_ne!(name_bytes(b"a\xff"), name_bytes(b"a\xfe"));
    }

    #[test]
    fn the_notation_is_rusts_debug_notation_so_daemon_messages_read_the_same() {
        for s in [
            "\x1b]2;t\x07",
            "a\u{202e}b\u{9b}",
            "\0\t\r\n\\",
            "\u{E0041}\u{2028}",
        ] {
            let debug = format!("{s:?}");
            assert_eq!(format!("\"{}\"", name(s)), debug);
        }
    }

    #[test]
    fn emoji_joiners_and_flags_are_shown_as_they_are() {
        let family = "👨\u{200d}👩\u{200d}👧 🏳\u{fe0f}\u{200d}🌈";
        assert_eq!(name(family), family);
        let england = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}";
        assert_eq!(name(england), england);
        // Tags smuggling hidden text are shown.
        assert_eq!(name("ok\u{E0041}\u{E007F}"), "ok\\u{e0041}\\u{e007f}");
        assert_eq!(
            name("\u{1F3F4}\u{E0041}x"),
            "\u{1F3F4}\\u{e0041}x",
            "a flag without its cancel tag is no flag"
        );
    }

    #[test]
    fn a_ten_thousand_character_title_is_cut_to_its_column_with_a_marker() {
        let long = "x".repeat(10_000);
        let fitted = name_fit(&long, 40);
        assert_eq!(fitted.chars().count(), 40);
        assert!(fitted.ends_with(TRUNCATED));
        // An escape is never cut in half.
        let fitted = name_fit("ab\u{202e}cdef", 6);
        assert_eq!(fitted, "ab…");
        assert_eq!(name_fit("日本語です", 5), "日本…");
        assert_eq!(pad("日本", 6), "日本  ");
    }

    #[test]
    fn json_escapes_what_serde_json_leaves_raw() {
        let doc = serde_json::to_string("\u{9b}\u{202e}\u{7f}\x1b").unwrap();
        assert_eq!(json(&doc), "\"\\u009b\\u202e\\u007f\\u001b\"");
        let doc = serde_json::to_string("\u{E0041}").unwrap();
        assert_eq!(json(&doc), "\"\\udb40\\udc41\"");
        assert!(matches!(json("{\"a\":\"é\"}"), Cow::Borrowed(_)));
    }
}
