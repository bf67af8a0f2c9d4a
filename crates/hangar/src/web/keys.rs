//! Named keys a phone taps instead of typing: what bytes each one sends.
//!
//! A permission prompt or a running turn needs keys, not a pasted prompt:
//! `hangar send` wraps its text in a bracketed paste, where Ctrl-C or Esc
//! would arrive as pasted text instead of a key press. Pure.

/// The bytes a terminal sends for the key `name`, or `None` for a name this
/// does not know. A single printable character is itself.
pub fn bytes_of(name: &str) -> Option<Vec<u8>> {
    let fixed: &[u8] = match name {
        "enter" => b"\r",
        "esc" | "escape" => b"\x1b",
        "tab" => b"\t",
        "backspace" => b"\x7f",
        "ctrl-c" => b"\x03",
        "ctrl-d" => b"\x04",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "space" => b" ",
        other => {
            let mut chars = other.chars();
            return match (chars.next(), chars.next()) {
                (Some(c), None) if !c.is_control() => Some(c.to_string().into_bytes()),
                _ => None,
            };
        }
    };
    Some(fixed.to_vec())
}

/// All of `names` as one byte string, or the first name not known.
pub fn bytes_of_all<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for n in names {
        out.extend(bytes_of(n).ok_or_else(|| n.to_owned())?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_keys_send_what_a_terminal_sends() {
        assert_eq!(bytes_of("ctrl-c").unwrap(), b"\x03");
        assert_eq!(bytes_of("enter").unwrap(), b"\r");
        assert_eq!(bytes_of("up").unwrap(), b"\x1b[A");
        assert_eq!(bytes_of("1").unwrap(), b"1");
        assert_eq!(bytes_of("é").unwrap(), "é".as_bytes());
    }

    #[test]
    fn unknown_names_and_control_characters_are_refused() {
        assert_eq!(bytes_of("f13"), None);
        assert_eq!(bytes_of("\x1b"), None);
        assert_eq!(bytes_of(""), None);
        assert_eq!(bytes_of_all(["1", "bogus"]), Err("bogus".to_owned()));
        assert_eq!(bytes_of_all(["1", "enter"]).unwrap(), b"1\r");
    }
}
