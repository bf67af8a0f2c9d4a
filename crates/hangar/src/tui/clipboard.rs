//! Copying out of the TUI: OSC 52 to the outer terminal (which reaches the
//! person's own machine even through SSH and tmux), and the system
//! clipboard when a clipboard program is there.

use std::io::Write;
use std::process::{Command, Stdio};

use base64::Engine;

/// The OSC 52 sequence that sets the clipboard to `text`.
pub fn osc52(text: &str) -> Vec<u8> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07").into_bytes()
}

/// The clipboard programs tried, each with the variable that says its
/// display is there.
const PROGRAMS: &[(&str, &[&str], &str)] = &[
    ("wl-copy", &[], "WAYLAND_DISPLAY"),
    ("xclip", &["-selection", "clipboard"], "DISPLAY"),
    ("xsel", &["--clipboard", "--input"], "DISPLAY"),
    ("pbcopy", &[], ""),
];

/// Hand `text` to the first clipboard program that runs, off the UI
/// thread. Without one (a server over SSH), OSC 52 alone carries it.
pub fn to_system(text: &str) {
    let text = text.to_owned();
    std::thread::spawn(move || {
        for (program, args, display) in PROGRAMS {
            if !display.is_empty() && std::env::var_os(display).is_none() {
                continue;
            }
            if *program == "pbcopy" && !cfg!(target_os = "macos") {
                continue;
            }
            let Ok(mut child) = Command::new(program)
                .args(*args)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            else {
                continue;
            };
            let written = child
                .stdin
                .take()
                .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
            if child.wait().is_ok_and(|s| s.success()) && written {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_carries_the_text_in_base64() {
        assert_eq!(osc52("hi"), b"\x1b]52;c;aGk=\x07".to_vec());
    }
}
