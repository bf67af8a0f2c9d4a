//! What a typed line means.
//!
//! Pure. A special command whose arguments do not parse (`slow soon hi`,
//! `crash`) is an ordinary prompt and gets echoed like any other line, so a
//! typo in a test shows up in the transcript instead of vanishing.

/// One line typed at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    /// Nothing but whitespace: the real CLIs just show the prompt again.
    Blank,
    /// An ordinary prompt, answered with `answer: <line>`.
    Prompt(&'a str),
    Clear,
    Slow {
        ms: u64,
        text: &'a str,
    },
    Ask(&'a str),
    Permission(&'a str),
    /// A permission prompt on the screen only: no transcript entry, no hook.
    PermissionScreenOnly(&'a str),
    Size,
    Exit,
    Crash(i32),
    SpawnChild,
    Alloc(usize),
    /// `grow <mb> <ms>`: a turn that works for `ms` while it takes `mb` MiB
    /// more, and holds it after, as an agent's heap keeps what a tool run's
    /// output made it take.
    Grow {
        mb: usize,
        ms: u64,
    },
    /// `tiocsti <text>`: an escape attempt (hangar's sandbox tests): push
    /// `<text>` into the terminal's input with `ioctl(TIOCSTI)`, as a
    /// hostile agent would to type a command after it exits.
    Tiocsti(&'a str),
    /// `api <url> <text>`: one streamed API call through `HTTPS_PROXY`.
    Api {
        url: &'a str,
        text: &'a str,
    },
}

impl Input<'_> {
    /// Whether the line starts a turn of the conversation (and so runs the
    /// `UserPromptSubmit` and `Stop` hooks).
    pub fn is_turn(&self) -> bool {
        !matches!(
            self,
            Input::Blank | Input::Clear | Input::Exit | Input::Crash(_)
        )
    }
}

pub fn parse(line: &str) -> Input<'_> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Input::Blank;
    }
    let (word, rest) = match trimmed.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim_start()),
        None => (trimmed, ""),
    };
    let special = match (word, rest) {
        ("/clear", "") => Some(Input::Clear),
        ("size", "") => Some(Input::Size),
        ("exit", "") => Some(Input::Exit),
        ("spawn-child", "") => Some(Input::SpawnChild),
        ("tiocsti", text) if !text.is_empty() => Some(Input::Tiocsti(text)),
        ("crash", code) => code.parse().ok().map(Input::Crash),
        ("alloc", mb) => mb.parse().ok().map(Input::Alloc),
        ("grow", args) => args.split_once(char::is_whitespace).and_then(|(mb, ms)| {
            Some(Input::Grow {
                mb: mb.parse().ok()?,
                ms: ms.trim().parse().ok()?,
            })
        }),
        ("ask", text) if !text.is_empty() => Some(Input::Ask(text)),
        ("permission", tool) if !tool.is_empty() => Some(Input::Permission(tool)),
        ("permission-screen-only", tool) if !tool.is_empty() => {
            Some(Input::PermissionScreenOnly(tool))
        }
        ("api", args) => {
            let (url, text) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
            (url.starts_with("https://") || url.starts_with("http://")).then(|| Input::Api {
                url,
                text: text.trim_start(),
            })
        }
        ("slow", args) => {
            let (ms, text) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
            ms.parse().ok().map(|ms| Input::Slow {
                ms,
                text: text.trim_start(),
            })
        }
        _ => None,
    };
    special.unwrap_or(Input::Prompt(trimmed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_are_prompts() {
        assert_eq!(parse("hello there\n"), Input::Prompt("hello there"));
        assert_eq!(parse("   "), Input::Blank);
    }

    #[test]
    fn special_commands_are_recognised() {
        assert_eq!(parse("/clear"), Input::Clear);
        assert_eq!(
            parse("slow 250 think hard"),
            Input::Slow {
                ms: 250,
                text: "think hard"
            }
        );
        assert_eq!(parse("slow 5"), Input::Slow { ms: 5, text: "" });
        assert_eq!(parse("ask which branch"), Input::Ask("which branch"));
        assert_eq!(parse("permission Bash"), Input::Permission("Bash"));
        assert_eq!(
            parse("permission-screen-only Bash"),
            Input::PermissionScreenOnly("Bash")
        );
        assert!(parse("slow 5 x").is_turn() && !parse("exit").is_turn());
        assert_eq!(parse("size"), Input::Size);
        assert_eq!(parse("exit"), Input::Exit);
        assert_eq!(parse("crash 3"), Input::Crash(3));
        assert_eq!(parse("spawn-child"), Input::SpawnChild);
        assert_eq!(parse("tiocsti echo x"), Input::Tiocsti("echo x"));
        assert_eq!(parse("alloc 16"), Input::Alloc(16));
        assert_eq!(parse("grow 64 2000"), Input::Grow { mb: 64, ms: 2000 });
        assert!(parse("grow 64 2000").is_turn());
        assert_eq!(
            parse("api https://localhost:1/v1/messages hello there"),
            Input::Api {
                url: "https://localhost:1/v1/messages",
                text: "hello there"
            }
        );
    }

    #[test]
    fn malformed_special_commands_are_ordinary_prompts() {
        assert_eq!(parse("slow soon hi"), Input::Prompt("slow soon hi"));
        assert_eq!(parse("crash"), Input::Prompt("crash"));
        assert_eq!(parse("alloc lots"), Input::Prompt("alloc lots"));
        assert_eq!(parse("grow 64"), Input::Prompt("grow 64"));
        assert_eq!(parse("exit now"), Input::Prompt("exit now"));
        assert_eq!(parse("ask"), Input::Prompt("ask"));
        assert_eq!(parse("api localhost hi"), Input::Prompt("api localhost hi"));
    }
}
