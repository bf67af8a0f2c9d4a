//! Keyboard input for the TUI: raw terminal bytes decoded into keys, and the
//! bytes typed in pass-through mode split into "for the pane" and "the
//! prefix key was pressed".
//!
//! The TUI reads stdin itself instead of using crossterm's event reader so
//! that pass-through forwards exactly the bytes the user typed (bracketed
//! paste included); only command mode needs keys decoded. `hangar attach`
//! splits its input with the same paste-aware filter.

/// The default prefix key: Ctrl-b, as in tmux (`[attach] detach_key`
/// changes it).
pub const PREFIX: u8 = 0x02;

/// The `Key::Ctrl` letter a prefix byte decodes to (`0x02` -> `b`).
pub fn ctrl_letter(prefix: u8) -> char {
    (prefix | 0x60) as char
}

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    /// Ctrl plus a letter, lower case (`Ctrl('b')` is the prefix).
    Ctrl(char),
    Enter,
    Esc,
    Backspace,
    Tab,
    BackTab,
    Up,
    Down,
    Left,
    Right,
    ShiftUp,
    ShiftDown,
    ShiftLeft,
    ShiftRight,
    /// A sequence command mode has no use for.
    Other,
}

/// Decode a chunk of terminal input into keys. A lone ESC at the end of a
/// chunk is the Esc key (terminals send a whole escape sequence in one
/// write). Pasted text arrives as its characters.
pub fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let key = match c {
            '\r' | '\n' => Key::Enter,
            '\t' => Key::Tab,
            '\x7f' | '\x08' => Key::Backspace,
            '\x1b' => {
                let rest = &chars[i..];
                match rest {
                    [] => Key::Esc,
                    ['[', 'A', ..] | ['O', 'A', ..] => {
                        i += 2;
                        Key::Up
                    }
                    ['[', 'B', ..] | ['O', 'B', ..] => {
                        i += 2;
                        Key::Down
                    }
                    ['[', 'C', ..] | ['O', 'C', ..] => {
                        i += 2;
                        Key::Right
                    }
                    ['[', 'D', ..] | ['O', 'D', ..] => {
                        i += 2;
                        Key::Left
                    }
                    ['[', 'Z', ..] => {
                        i += 2;
                        Key::BackTab
                    }
                    ['[', '1', ';', '2', d, ..] if matches!(d, 'A'..='D') => {
                        let d = *d;
                        i += 5;
                        match d {
                            'A' => Key::ShiftUp,
                            'B' => Key::ShiftDown,
                            'C' => Key::ShiftRight,
                            _ => Key::ShiftLeft,
                        }
                    }
                    ['[', ..] => {
                        // Skip any other CSI sequence (paste markers, function keys).
                        let end = rest[1..]
                            .iter()
                            .position(|c| ('\x40'..='\x7e').contains(c))
                            .map(|p| p + 2)
                            .unwrap_or(rest.len());
                        i += end;
                        Key::Other
                    }
                    ['\x1b', ..] => Key::Esc,
                    _ => {
                        // Alt plus a key: ignored in command mode.
                        i += 1;
                        Key::Other
                    }
                }
            }
            c if (c as u32) < 0x20 => Key::Ctrl(((c as u8) | 0x60) as char),
            c => Key::Char(c),
        };
        keys.push(key);
    }
    keys
}

/// What pass-through mode does with a chunk of input.
#[derive(Debug, PartialEq, Eq)]
pub struct PassThrough {
    /// Bytes for the focused pane.
    pub forward: Vec<u8>,
    /// The prefix key was pressed: leave pass-through; `rest` are the bytes
    /// typed after it, for command mode.
    pub left: Option<Vec<u8>>,
}

/// Splits pass-through input at the prefix key. Inside a bracketed paste the
/// prefix byte is pasted text, not a key.
#[derive(Debug)]
pub struct PassThroughFilter {
    prefix: u8,
    in_paste: bool,
}

impl Default for PassThroughFilter {
    fn default() -> Self {
        PassThroughFilter::new(PREFIX)
    }
}

impl PassThroughFilter {
    pub fn new(prefix: u8) -> Self {
        PassThroughFilter {
            prefix,
            in_paste: false,
        }
    }

    pub fn feed(&mut self, input: &[u8]) -> PassThrough {
        let mut i = 0;
        while i < input.len() {
            if input[i..].starts_with(PASTE_START) {
                self.in_paste = true;
                i += PASTE_START.len();
                continue;
            }
            if input[i..].starts_with(PASTE_END) {
                self.in_paste = false;
                i += PASTE_END.len();
                continue;
            }
            if input[i] == self.prefix && !self.in_paste {
                return PassThrough {
                    forward: input[..i].to_vec(),
                    left: Some(input[i + 1..].to_vec()),
                };
            }
            i += 1;
        }
        PassThrough {
            forward: input.to_vec(),
            left: None,
        }
    }
}

/// Adapt typed bytes to the modes the pane's program switched on: the
/// outer terminal always sends plain arrows and paste markers, the program
/// may want application-cursor arrows and may not know about pastes.
pub fn adapt_for_pane(bytes: &[u8], application_cursor: bool, bracketed_paste: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if !bracketed_paste && (rest.starts_with(PASTE_START) || rest.starts_with(PASTE_END)) {
            i += PASTE_START.len();
            continue;
        }
        if application_cursor
            && rest.len() >= 3
            && rest[0] == 0x1b
            && rest[1] == b'['
            && matches!(rest[2], b'A'..=b'D')
        {
            out.extend_from_slice(&[0x1b, b'O', rest[2]]);
            i += 3;
            continue;
        }
        out.push(rest[0]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_arrows_and_controls_decode_to_keys() {
        assert_eq!(
            decode(b"a\x1b[A\x1b[D\x02\r\x7f\x1b"),
            vec![
                Key::Char('a'),
                Key::Up,
                Key::Left,
                Key::Ctrl('b'),
                Key::Enter,
                Key::Backspace,
                Key::Esc
            ]
        );
    }

    #[test]
    fn shift_arrows_and_backtab_decode() {
        assert_eq!(
            decode(b"\x1b[1;2C\x1b[Z"),
            vec![Key::ShiftRight, Key::BackTab]
        );
    }

    #[test]
    fn unknown_csi_sequences_are_one_other_key() {
        assert_eq!(decode(b"\x1b[15~x"), vec![Key::Other, Key::Char('x')]);
    }

    #[test]
    fn pass_through_stops_at_the_prefix_and_hands_the_rest_to_command_mode() {
        let mut f = PassThroughFilter::default();
        let out = f.feed(b"ls\x02%");
        assert_eq!(out.forward, b"ls");
        assert_eq!(out.left, Some(b"%".to_vec()));
    }

    #[test]
    fn a_prefix_byte_inside_a_paste_is_pasted_not_a_key() {
        let mut f = PassThroughFilter::default();
        let out = f.feed(b"\x1b[200~a\x02b");
        assert_eq!(out.left, None);
        let out = f.feed(b"c\x1b[201~\x02");
        assert_eq!(out.forward, b"c\x1b[201~");
        assert_eq!(out.left, Some(vec![]));
    }

    #[test]
    fn another_prefix_key_splits_pass_through_and_ctrl_b_is_then_typed() {
        let mut f = PassThroughFilter::new(0x01);
        let out = f.feed(b"a\x02b\x01z");
        assert_eq!(out.forward, b"a\x02b");
        assert_eq!(out.left, Some(b"z".to_vec()));
        assert_eq!(ctrl_letter(0x01), 'a');
        assert_eq!(ctrl_letter(PREFIX), 'b');
    }

    #[test]
    fn arrows_follow_the_panes_cursor_mode_and_paste_markers_are_dropped_when_unwanted() {
        assert_eq!(adapt_for_pane(b"\x1b[A", true, true), b"\x1bOA");
        assert_eq!(adapt_for_pane(b"\x1b[A", false, true), b"\x1b[A");
        assert_eq!(adapt_for_pane(b"\x1b[200~hi\x1b[201~", false, false), b"hi");
        assert_eq!(
            adapt_for_pane(b"\x1b[200~hi\x1b[201~", false, true),
            b"\x1b[200~hi\x1b[201~"
        );
    }
}
