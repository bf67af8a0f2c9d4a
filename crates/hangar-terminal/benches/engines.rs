//! The measurement that chose the server-side terminal: the same recorded
//! agent output fed, in 16 KiB reads as the PTY reader delivers it, through
//! `vt100` 0.18 (the daemon's screen before), bare `alacritty_terminal`,
//! `avt`, and this crate (alacritty plus the byte-capped history), at 200x50
//! with history.
//!
//! A second group feeds plain 99-character lines at 120x40, the workload on
//! which the daemon cost more than tmux (issue 20).
//!
//! Run: `cargo bench -p hangar-terminal --bench engines` (HANGAR_BENCH_MB
//! sets the size of the output, default 100; `-- plain_lines` runs only the
//! second group). Figures are in BENCHMARKS.md and docs/src/benchmarks-history.md.

use std::hint::black_box;
use std::num::NonZeroU16;

use alacritty_terminal::Term;
use alacritty_terminal::event::VoidListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::term::Config as TermConfig;
use alacritty_terminal::vte::ansi::{Processor, StdSyncHandler};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const ROWS: u16 = 50;
const COLS: u16 = 200;
const HISTORY_LINES: usize = 2000;
const READ: usize = 16 * 1024;

/// A deterministic stand-in for what coding agents print: coloured log and
/// test lines, long wrapping lines, a status area redrawn in place with
/// cursor movement (a spinner and a token counter), and box drawing in
/// true colour.
fn agent_output(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 4096);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = [
        "cargo",
        "test",
        "crates/hangar",
        "src/tui/app.rs",
        "fn",
        "render",
        "Ok(())",
        "error[E0308]",
        "mismatched",
        "types",
        "expected",
        "found",
        "warning:",
        "unused",
        "import",
        "let",
        "mut",
        "self.screen",
        "=>",
        "{",
        "}",
        "#[test]",
        "async",
        "await",
        "tokio::spawn",
        "Result<()>",
    ];
    let spinner = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut frame = 0usize;
    while out.len() < bytes {
        match next() % 20 {
            0..=11 => {
                let n = 4 + (next() % 14) as usize;
                let colour = 31 + (next() % 6);
                out.push_str(&format!("\x1b[{colour}m{:>4}\x1b[0m ", next() % 9999));
                for _ in 0..n {
                    let w = words[(next() % words.len() as u64) as usize];
                    if next() % 5 == 0 {
                        out.push_str(&format!("\x1b[1m{w}\x1b[22m "));
                    } else {
                        out.push_str(w);
                        out.push(' ');
                    }
                }
                out.push_str("\r\n");
            }
            12..=13 => {
                let n = 300 + (next() % 500) as usize;
                while !out.len().is_multiple_of(7) {
                    out.push('.');
                }
                for i in 0..n {
                    out.push(char::from(b'a' + (i % 26) as u8));
                }
                out.push_str("\r\n");
            }
            14..=18 => {
                // The status area: up three lines, rewrite each in place.
                frame += 1;
                out.push_str("\x1b[3A");
                out.push_str(&format!(
                    "\r\x1b[2K\x1b[38;5;208m{}\x1b[0m Thinking… ({}s · esc to interrupt)\r\n",
                    spinner[frame % spinner.len()],
                    frame / 10
                ));
                out.push_str(&format!(
                    "\r\x1b[2K  \x1b[2m↓ {} tokens\x1b[22m\r\n",
                    frame * 37
                ));
                out.push_str("\r\x1b[2K\x1b[7m> \x1b[27m\r\n");
            }
            _ => {
                out.push_str("\x1b[38;2;120;130;250m╭");
                out.push_str(&"─".repeat(60));
                out.push_str("╮\x1b[0m\r\n\x1b[38;2;120;130;250m│\x1b[0m ");
                out.push_str(&format!("{:<58}", "✻ Welcome to the agent"));
                out.push_str(" \x1b[38;2;120;130;250m│\x1b[0m\r\n\x1b[38;2;120;130;250m╰");
                out.push_str(&"─".repeat(60));
                out.push_str("╯\x1b[0m\r\n");
            }
        }
    }
    out
}

/// The output cut into reads of about 16 KiB, on character boundaries (avt
/// takes `&str`).
fn reads(output: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = output;
    while !rest.is_empty() {
        let mut end = READ.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (part, tail) = rest.split_at(end);
        parts.push(part);
        rest = tail;
    }
    parts
}

struct Size;

impl Dimensions for Size {
    fn total_lines(&self) -> usize {
        usize::from(ROWS)
    }
    fn screen_lines(&self) -> usize {
        usize::from(ROWS)
    }
    fn columns(&self) -> usize {
        usize::from(COLS)
    }
}

fn engines(c: &mut Criterion) {
    let mb: usize = std::env::var("HANGAR_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let output = agent_output(mb * 1024 * 1024);
    let parts = reads(&output);
    let mut group = c.benchmark_group("agent_output_200x50");
    group.throughput(Throughput::Bytes(output.len() as u64));
    group.sample_size(10);

    group.bench_function("vt100_0.18", |b| {
        b.iter(|| {
            let rows = NonZeroU16::new(ROWS).unwrap_or(NonZeroU16::MIN);
            let cols = NonZeroU16::new(COLS).unwrap_or(NonZeroU16::MIN);
            let mut p = vt100::Parser::new(rows, cols, HISTORY_LINES);
            for part in &parts {
                p.process(part.as_bytes());
            }
            black_box(p.screen().cursor_position());
        })
    });

    group.bench_function("alacritty_terminal_0.26", |b| {
        b.iter(|| {
            let config = TermConfig {
                scrolling_history: HISTORY_LINES,
                ..TermConfig::default()
            };
            let mut term = Term::new(config, &Size, VoidListener);
            let mut parser: Processor<StdSyncHandler> = Processor::new();
            for part in &parts {
                parser.advance(&mut term, part.as_bytes());
            }
            black_box(term.grid().cursor.point);
        })
    });

    group.bench_function("avt_0.19", |b| {
        b.iter(|| {
            let mut vt = avt::Terminal::with_scrollback(
                usize::from(COLS),
                usize::from(ROWS),
                Some(HISTORY_LINES),
            )
            .unwrap_or_else(|e| panic!("avt size: {e:?}"));
            for part in &parts {
                vt.feed(*part);
            }
            black_box(vt.cursor());
        })
    });

    group.bench_function("hangar_terminal", |b| {
        b.iter(|| {
            let mut t =
                hangar_terminal::Terminal::new(ROWS, COLS, hangar_terminal::Config::default());
            for part in &parts {
                t.feed(part.as_bytes());
            }
            black_box(t.history_len());
        })
    });
    group.finish();
}

/// Plain 99-character lines as a PTY delivers them (`\n` made `\r\n`), in
/// 4 KiB reads, at the daemon's default 120x40: each line scrolls one row
/// into history, so what a kept line costs shows here, not in the agent mix.
fn plain_lines(c: &mut Criterion) {
    let mb: usize = std::env::var("HANGAR_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let line = format!(
        "{}\r\n",
        &"0123456789abcdefghijklmnopqrstuvwxyz".repeat(3)[..99]
    );
    let output = line.repeat(mb * 1024 * 1024 / line.len());
    let parts: Vec<&[u8]> = output.as_bytes().chunks(4096).collect();
    let mut group = c.benchmark_group("plain_lines_120x40");
    group.throughput(Throughput::Bytes(output.len() as u64));
    group.sample_size(10);
    group.bench_function("alacritty_terminal_0.26_no_history", |b| {
        b.iter(|| {
            let size = TermSize(40, 120);
            let config = TermConfig {
                scrolling_history: 0,
                ..TermConfig::default()
            };
            let mut term = Term::new(config, &size, VoidListener);
            let mut parser: Processor<StdSyncHandler> = Processor::new();
            for part in &parts {
                parser.advance(&mut term, part);
            }
            black_box(term.grid().cursor.point);
        })
    });
    group.bench_function("hangar_terminal", |b| {
        b.iter(|| {
            let mut t = hangar_terminal::Terminal::new(40, 120, hangar_terminal::Config::default());
            for part in &parts {
                t.feed(part);
            }
            black_box(t.history_len());
        })
    });
    group.finish();
}

/// A screen of `rows` x `columns`.
struct TermSize(usize, usize);

impl Dimensions for TermSize {
    fn total_lines(&self) -> usize {
        self.0
    }
    fn screen_lines(&self) -> usize {
        self.0
    }
    fn columns(&self) -> usize {
        self.1
    }
}

criterion_group!(benches, engines, plain_lines);
criterion_main!(benches);
