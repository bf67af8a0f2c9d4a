//! Usage limits: what a provider's headers, error bodies and words say about
//! an account's windows, whether a refusal is a usage limit, when it resets,
//! and when hangar may type the continuation prompt.
//!
//! Pure: the daemon hands in headers, bodies, screen text and clocks. Names
//! come from the real sources (docs/src/cli-facts.md "At a usage limit"; openai/codex
//! `codex-rs/codex-api/src/rate_limits.rs`). It must never call a transient
//! refusal (a 429 without unified headers, a 529 `overloaded_error`) a usage
//! limit, never trust a reset more than 30 days ahead, and never let a
//! continuation fire mid-turn or after a person typed.

use serde::{Deserialize, Serialize};

/// How far ahead a reset may be and still be believed.
pub const MAX_RESET_AHEAD_MS: i64 = 30 * 24 * 3600 * 1000;
/// The largest jitter added to a continuation, so a fleet does not wake at
/// one instant.
pub const MAX_JITTER_MS: i64 = 30_000;

/// One usage window of an account.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// `five_hour`, `seven_day`, or Codex's `primary` / `secondary` when
    /// their length is not 5 h / 7 d.
    pub kind: String,
    /// 0..100 (Anthropic's utilization fraction times 100); can pass 100.
    pub used_percent: Option<f64>,
    /// Epoch milliseconds.
    pub resets_at: Option<i64>,
    /// Anthropic's per-window status (`allowed`, `allowed_warning`,
    /// `rejected`), `None` for Codex.
    pub status: Option<String>,
}

/// The API family a response came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages (Claude Code).
    Anthropic,
    /// OpenAI Responses (Codex).
    Responses,
    /// OpenAI chat completions (OpenCode and others).
    Chat,
}

impl Api {
    /// From a request path (`/v1/messages`, `/v1/responses`,
    /// `/v1/chat/completions`), `None` for anything else.
    pub fn from_path(path: &str) -> Option<Api> {
        let p = path.split('?').next().unwrap_or("").trim_end_matches('/');
        if p.ends_with("/messages") {
            Some(Api::Anthropic)
        } else if p.ends_with("/responses") {
            Some(Api::Responses)
        } else if p.ends_with("/chat/completions") {
            Some(Api::Chat)
        } else {
            None
        }
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

fn epoch_secs_ms(v: &str) -> Option<i64> {
    let s: i64 = v.trim().parse().ok()?;
    (s > 0).then(|| s.saturating_mul(1000))
}

fn finite(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f >= 0.0)
}

/// The windows a response's headers report (Anthropic unified headers or
/// Codex's). Malformed values are left out, never guessed.
pub fn windows_from_headers(headers: &[(String, String)]) -> Vec<Window> {
    let mut out = Vec::new();
    for (tag, kind) in [("5h", "five_hour"), ("7d", "seven_day")] {
        let p = format!("anthropic-ratelimit-unified-{tag}-");
        let used = header(headers, &format!("{p}utilization"))
            .and_then(finite)
            .map(|f| f * 100.0);
        let reset = header(headers, &format!("{p}reset")).and_then(epoch_secs_ms);
        let status = header(headers, &format!("{p}status")).map(str::to_owned);
        if used.is_some() || reset.is_some() || status.is_some() {
            out.push(Window {
                kind: kind.to_owned(),
                used_percent: used,
                resets_at: reset,
                status,
            });
        }
    }
    for which in ["primary", "secondary"] {
        let p = format!("x-codex-{which}-");
        let Some(used) = header(headers, &format!("{p}used-percent")).and_then(finite) else {
            continue;
        };
        let minutes =
            header(headers, &format!("{p}window-minutes")).and_then(|v| v.parse::<i64>().ok());
        out.push(Window {
            kind: codex_window_kind(which, minutes),
            used_percent: Some(used),
            resets_at: header(headers, &format!("{p}reset-at")).and_then(epoch_secs_ms),
            status: None,
        });
    }
    out
}

/// A Codex window's kind: `five_hour` / `seven_day` by its length, else
/// its place (`primary`, `secondary`), from its headers or its rollout's
/// `rate_limits`.
pub fn codex_window_kind(which: &str, window_minutes: Option<i64>) -> String {
    match window_minutes {
        Some(300) => "five_hour",
        Some(10080) => "seven_day",
        _ => which,
    }
    .to_owned()
}

/// A session's limit as hangar keeps it (persisted, so a restart keeps
/// every limit and every scheduled continuation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionLimit {
    /// `five_hour`, `seven_day`, `usage_limit`, `rate_limit`, `retry_after`.
    pub kind: String,
    /// Epoch ms; `None` when no source said.
    pub resets_at: Option<i64>,
    /// Who said so: `proxy`, `hook`, `transcript`, `screen`.
    pub source: String,
    /// When hangar learned of it (epoch ms).
    pub since_ms: i64,
    /// When the continuation prompt is due; `None`: none is scheduled.
    pub continue_at: Option<i64>,
    /// The limit ended a turn the agent was working on.
    #[serde(default)]
    pub stopped_mid_task: bool,
    /// The continuation was typed (never twice for one limit).
    #[serde(default)]
    pub continued: bool,
    /// The provider account (a hash of the credential), when known.
    #[serde(default)]
    pub account: Option<String>,
}

/// What the usage subsystem keeps per session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageSessionState {
    #[serde(default)]
    pub limit: Option<SessionLimit>,
    /// The session's own switch (`hangar new --no-auto-continue`, `hangar
    /// limit ID --continue on|off`); `None`: `[limits] auto_continue`.
    #[serde(default)]
    pub auto_continue: Option<bool>,
    /// The session's goal (`hangar goal`), running or ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<crate::goal::Goal>,
    /// The session's own cost budget in USD per day (`hangar new
    /// --max-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Prompts an orchestrating agent sent while the account was limited,
    /// delivered in order after the reset (rule 13: queued, never sent to
    /// a limited account, never dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued_prompts: Vec<String>,
}

/// Which of two signals about one limit wins: the proxy over a hook over the
/// transcript over the screen, and a known reset over an unknown one.
pub fn source_rank(source: &str) -> u8 {
    match source {
        "proxy" => 0,
        "hook" => 1,
        "transcript" => 2,
        "screen" => 3,
        _ => 4,
    }
}

/// A new sighting of a limit folded into the one a session already has.
/// A sighting after the session continued is a new limit (a second
/// refusal: limited again with the new reset); otherwise the more trusted
/// source wins, and a known reset is never replaced by an unknown one.
pub fn fold_limit(have: Option<&SessionLimit>, seen: SessionLimit) -> SessionLimit {
    let Some(have) = have else {
        return seen;
    };
    if have.continued {
        return seen;
    }
    let better = source_rank(&seen.source) < source_rank(&have.source)
        || (have.resets_at.is_none() && seen.resets_at.is_some());
    let mut out = if better && (seen.resets_at.is_some() || have.resets_at.is_none()) {
        SessionLimit {
            since_ms: have.since_ms,
            stopped_mid_task: have.stopped_mid_task || seen.stopped_mid_task,
            account: seen.account.clone().or_else(|| have.account.clone()),
            ..seen
        }
    } else {
        have.clone()
    };
    out.stopped_mid_task |= seen.stopped_mid_task;
    out
}

/// A refusal that is a usage limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LimitHit {
    /// `five_hour`, `seven_day`, `usage_limit` (Codex without a window),
    /// `rate_limit` (a transcript or screen that names none), `retry_after`.
    pub kind: String,
    /// Epoch milliseconds, `None` when unknown.
    pub resets_at: Option<i64>,
}

/// Whether a response is a refusal for a usage limit, and its reset.
/// Anthropic: a 429 with `anthropic-ratelimit-unified-status: rejected`
/// (a 429 without unified headers, a 529 `overloaded_error`: no). Codex: a
/// 429 whose body's `error.type` is `usage_limit_reached`. Chat APIs
/// (OpenCode): a 429 with `retry-after`.
pub fn classify_refusal(
    api: Api,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    now_ms: i64,
) -> Option<LimitHit> {
    if status != 429 {
        return None;
    }
    let retry_after = header(headers, "retry-after")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|s| *s >= 0)
        .map(|s| now_ms.saturating_add(s.saturating_mul(1000)));
    match api {
        Api::Anthropic => {
            if header(headers, "anthropic-ratelimit-unified-status") != Some("rejected") {
                return None;
            }
            let windows = windows_from_headers(headers);
            let rejected = windows
                .iter()
                .filter(|w| w.status.as_deref() == Some("rejected"))
                .max_by_key(|w| w.resets_at);
            let claim = header(headers, "anthropic-ratelimit-unified-representative-claim");
            let kind = rejected
                .map(|w| w.kind.clone())
                .or_else(|| claim.map(str::to_owned))
                .unwrap_or_else(|| "rate_limit".to_owned());
            let resets_at = header(headers, "anthropic-ratelimit-unified-reset")
                .and_then(epoch_secs_ms)
                .or_else(|| rejected.and_then(|w| w.resets_at))
                .or(retry_after);
            Some(LimitHit { kind, resets_at })
        }
        Api::Responses => {
            let v: serde_json::Value = serde_json::from_slice(body).ok()?;
            let err = v.get("error")?;
            if err.get("type").and_then(|t| t.as_str()) != Some("usage_limit_reached") {
                return None;
            }
            let resets_at = err
                .get("resets_at")
                .and_then(|r| r.as_i64())
                .filter(|s| *s > 0)
                .map(|s| s.saturating_mul(1000))
                .or_else(|| {
                    err.get("resets_in_seconds")
                        .and_then(|r| r.as_i64())
                        .map(|s| now_ms.saturating_add(s.saturating_mul(1000)))
                })
                .or_else(|| {
                    windows_from_headers(headers)
                        .into_iter()
                        .filter(|w| w.used_percent.is_some_and(|u| u >= 100.0))
                        .filter_map(|w| w.resets_at)
                        .max()
                });
            let kind = windows_from_headers(headers)
                .into_iter()
                .filter(|w| w.used_percent.is_some_and(|u| u >= 100.0))
                .map(|w| w.kind)
                .next()
                .unwrap_or_else(|| "usage_limit".to_owned());
            Some(LimitHit { kind, resets_at })
        }
        Api::Chat => retry_after.map(|r| LimitHit {
            kind: "retry_after".to_owned(),
            resets_at: Some(r),
        }),
    }
}

/// A reset time as limit words give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResetText {
    /// Epoch seconds (old Claude transcripts: `Claude AI usage limit
    /// reached|<epoch>`).
    Epoch(i64),
    /// A wall-clock time, in the named zone or (None) the local one.
    Clock {
        hour: u8,
        minute: u8,
        zone: Option<String>,
    },
    /// The words say limited but not until when.
    Unknown,
}

/// Whether `text` (a screen line, a transcript message) says the account hit
/// a usage limit, and the reset it names. The forms known (docs/src/cli-facts.md):
/// `You've hit your limit · resets 4pm (Europe/Berlin)`, `5-hour limit
/// reached ∙ resets 5:30am`, `Claude usage limit reached. Your limit will
/// reset at 12am.`, Codex's `You've hit your usage limit. ... try again at
/// 3:28 PM.`, `Claude AI usage limit reached|1767225600`, and the API-key
/// refusal `This request would exceed your account's rate limit` (no reset).
pub fn parse_limit_text(text: &str) -> Option<ResetText> {
    let lower = text.to_lowercase();
    if let Some(i) = lower.find("claude ai usage limit reached|") {
        let rest = &text[i + "claude ai usage limit reached|".len()..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        return Some(
            digits
                .parse()
                .map(ResetText::Epoch)
                .unwrap_or(ResetText::Unknown),
        );
    }
    let is_limit = lower.contains("you've hit your")
        || lower.contains("you’ve hit your")
        || lower.contains("limit reached")
        || lower.contains("would exceed your account's rate limit");
    if !is_limit {
        return None;
    }
    for marker in ["resets ", "reset at ", "try again at "] {
        if let Some(i) = lower.rfind(marker) {
            let after = &text[i + marker.len()..];
            if let Some(r) = parse_clock(after) {
                return Some(r);
            }
        }
    }
    Some(ResetText::Unknown)
}

/// `4pm (Europe/Berlin)`, `5:30am`, `12am.`, `3:28 PM.`, `16:00`.
fn parse_clock(s: &str) -> Option<ResetText> {
    let s = s.trim_start();
    let mut chars = s.char_indices().peekable();
    let mut end = 0;
    let mut hour: u32 = 0;
    let mut digits = 0;
    while let Some(&(i, c)) = chars.peek() {
        if c.is_ascii_digit() && digits < 2 {
            hour = hour * 10 + c.to_digit(10)?;
            digits += 1;
            end = i + 1;
            chars.next();
        } else {
            break;
        }
    }
    if digits == 0 {
        return None;
    }
    let mut minute: u32 = 0;
    let rest = &s[end..];
    let rest = if let Some(r) = rest.strip_prefix(':') {
        let m: String = r.chars().take(2).collect();
        if m.len() != 2 || !m.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        minute = m.parse().ok()?;
        &r[2..]
    } else {
        rest
    };
    let trimmed = rest.trim_start();
    let lower = trimmed.to_ascii_lowercase();
    let (meridiem, rest) = if lower.starts_with("am") {
        (Some(false), &trimmed[2..])
    } else if lower.starts_with("pm") {
        (Some(true), &trimmed[2..])
    } else {
        (None, rest)
    };
    match meridiem {
        Some(pm) => {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour = match (hour, pm) {
                (12, false) => 0,
                (12, true) => 12,
                (h, true) => h + 12,
                (h, false) => h,
            };
        }
        None if digits == 2 || minute > 0 || s[end..].starts_with(':') => {
            if hour > 23 {
                return None;
            }
        }
        // A bare number with no minutes and no am/pm is not a time.
        None => return None,
    }
    if minute > 59 {
        return None;
    }
    let zone = rest.trim_start().strip_prefix('(').and_then(|z| {
        let z = &z[..z.find(')')?];
        let ok = !z.is_empty()
            && z.len() <= 64
            && z.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'));
        ok.then(|| z.to_owned())
    });
    Some(ResetText::Clock {
        hour: hour as u8,
        minute: minute as u8,
        zone,
    })
}

/// The instant a reset text names, `None` when unknown. A clock time is the
/// next time it shows on the clock of its zone (at most 24 h ahead, a
/// minute's grace behind). `offset_secs(zone)` is the zone's UTC offset
/// (`None` for the local zone); an unknown zone gives `None`.
pub fn resolve_reset(
    reset: &ResetText,
    now_ms: i64,
    offset_secs: &dyn Fn(Option<&str>) -> Option<i32>,
) -> Option<i64> {
    match reset {
        ResetText::Epoch(s) => Some(s.saturating_mul(1000)),
        ResetText::Unknown => None,
        ResetText::Clock { hour, minute, zone } => {
            let offset_ms = i64::from(offset_secs(zone.as_deref())?) * 1000;
            let day = 86_400_000i64;
            let local_now = now_ms + offset_ms;
            let midnight = local_now.div_euclid(day) * day;
            let mut t = midnight + (i64::from(*hour) * 3600 + i64::from(*minute) * 60) * 1000;
            if t < local_now - 60_000 {
                t += day;
            }
            Some(t - offset_ms)
        }
    }
}

/// What hangar believes about a reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetVerdict {
    /// In the future and believable.
    At(i64),
    /// Already passed: the limit is over.
    Passed,
    /// Unknown, or more than 30 days ahead (a clock or parse fault).
    Unknown,
}

/// The reset of the windows that are used up (100 % or more), the latest
/// when several are.
pub fn exhausted_reset(windows: &[Window]) -> Option<i64> {
    windows
        .iter()
        .filter(|w| w.used_percent.is_some_and(|u| u >= 100.0))
        .filter_map(|w| w.resets_at)
        .max()
}

/// The reset of a refusal an agent's records name (`named`), else the
/// reset of the window they last showed used up, while it is still ahead:
/// Codex writes that window's `token_count` just before the refusal, and a
/// look at its rollout can fall between the two lines. `None` leaves it to
/// the refusal's words, which name at best a minute.
pub fn refusal_reset(named: Option<i64>, last_exhausted: Option<i64>, now_ms: i64) -> Option<i64> {
    named.or(last_exhausted.filter(|&r| r > now_ms))
}

pub fn judge_reset(resets_at: Option<i64>, now_ms: i64) -> ResetVerdict {
    match resets_at {
        None => ResetVerdict::Unknown,
        Some(r) if r <= now_ms => ResetVerdict::Passed,
        Some(r) if r - now_ms > MAX_RESET_AHEAD_MS => ResetVerdict::Unknown,
        Some(r) => ResetVerdict::At(r),
    }
}

/// A deterministic jitter below `max_ms` (at most [`MAX_JITTER_MS`]) for a
/// session (FNV-1a of its id), so a restart schedules the same instant.
pub fn jitter_ms(session: &str, max_ms: i64) -> i64 {
    let max = max_ms.clamp(0, MAX_JITTER_MS);
    if max == 0 {
        return 0;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in session.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % max as u64) as i64
}

/// When the continuation is due: reset + delay + the session's jitter (below
/// `jitter_max_ms`); `None` when the reset is unknown (a person decides).
pub fn continue_at(
    resets_at: Option<i64>,
    delay_secs: u64,
    jitter_max_ms: i64,
    session: &str,
) -> Option<i64> {
    let r = resets_at?;
    Some(
        r.saturating_add((delay_secs as i64).saturating_mul(1000))
            .saturating_add(jitter_ms(session, jitter_max_ms)),
    )
}

/// The facts the daemon gathered about a limited session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContinueFacts {
    pub now_ms: i64,
    /// When the session became limited.
    pub since_ms: i64,
    pub continue_at: Option<i64>,
    /// `[limits] auto_continue` and the session's own switch.
    pub auto_continue: bool,
    /// The limit ended a turn (the agent was working), not an idle agent.
    pub stopped_mid_task: bool,
    /// A turn is running now.
    pub mid_turn: bool,
    /// A person typed into the session since the limit.
    pub person_typed_since: bool,
    /// The session has no process (hibernated).
    pub hibernated: bool,
    /// `[limits] wake_to_continue`.
    pub wake_to_continue: bool,
    /// Already continued once for this limit.
    pub already_continued: bool,
    /// The session's cost budget (or the day's) is spent: nothing more is
    /// typed into it on hangar's own.
    pub budget_spent: bool,
}

/// What to do about a limited session now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContinueDecision {
    /// Type the continuation prompt now (waking first when hibernated).
    Type { wake_first: bool },
    /// Not yet: look again at this instant.
    WaitUntil(i64),
    /// Wait for the turn to end, then look again.
    WaitForTurnEnd,
    /// Never for this limit; the reason is said in the journal.
    StandDown(&'static str),
}

/// How long a limit whose reset is unknown waits for a source that knows
/// it before hangar says it will not carry on by itself.
pub const UNKNOWN_RESET_GRACE_MS: i64 = 30_000;

pub fn decide_continue(f: &ContinueFacts) -> ContinueDecision {
    if f.already_continued {
        return ContinueDecision::StandDown("already continued once for this limit");
    }
    if !f.auto_continue {
        return ContinueDecision::StandDown("auto-continue is off");
    }
    if f.budget_spent {
        return ContinueDecision::StandDown("the cost budget is spent");
    }
    if !f.stopped_mid_task {
        return ContinueDecision::StandDown("the limit did not stop a task");
    }
    if f.person_typed_since {
        return ContinueDecision::StandDown("a person typed into the session since the limit");
    }
    let Some(at) = f.continue_at else {
        // The screen's words often come first and name no reset; the
        // transcript or the proxy that names it may follow by seconds.
        let settled = f.since_ms.saturating_add(UNKNOWN_RESET_GRACE_MS);
        if f.now_ms < settled {
            return ContinueDecision::WaitUntil(settled);
        }
        return ContinueDecision::StandDown("the reset time is unknown");
    };
    if f.now_ms < at {
        return ContinueDecision::WaitUntil(at);
    }
    if f.hibernated && !f.wake_to_continue {
        return ContinueDecision::StandDown("hibernated and [limits] wake_to_continue is off");
    }
    if f.mid_turn {
        return ContinueDecision::WaitForTurnEnd;
    }
    ContinueDecision::Type {
        wake_first: f.hibernated,
    }
}

/// May a wake or prompt go to this account now? (Rule 13: never before the
/// reset; an unknown reset holds until a person acts.)
pub fn account_may_be_used(limited_until: Option<i64>, unknown_reset: bool, now_ms: i64) -> bool {
    if unknown_reset {
        return false;
    }
    limited_until.is_none_or(|r| r <= now_ms)
}

/// `16:00`: the wall-clock time of `ms` at `offset_ms` from UTC (the
/// caller asks the C library for the local offset).
pub fn clock_text(ms: i64, offset_ms: i64) -> String {
    let day_secs = (ms.saturating_add(offset_ms) / 1000).rem_euclid(86_400);
    format!("{:02}:{:02}", day_secs / 3600, (day_secs % 3600) / 60)
}

/// Epoch ms of an RFC 3339 time (`2026-12-02T10:00:00.123Z`, `+01:00`).
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = s.get(start..i)?;
        let f3: String = frac.chars().chain("000".chars()).take(3).collect();
        ms = f3.parse().ok()?;
    }
    let offset_s = match s.get(i..)? {
        "Z" | "z" => 0,
        tz if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) => {
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            sign * (tz.get(1..3)?.parse::<i64>().ok()? * 3600
                + tz.get(4..6)?.parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + se) - offset_s) * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_without_its_own_reset_takes_the_used_up_windows_while_it_is_ahead() {
        let window = |used: f64, resets_at: i64| Window {
            kind: "primary".to_owned(),
            used_percent: Some(used),
            resets_at: Some(resets_at),
            status: None,
        };
        let windows = [
            window(10.0, 9_000),
            window(100.0, 5_000),
            window(100.0, 7_000),
        ];
        assert_eq!(exhausted_reset(&windows), Some(7_000));
        assert_eq!(exhausted_reset(&windows[..1]), None);
        // Named by the refusal's own records: that one.
        assert_eq!(refusal_reset(Some(6_000), Some(7_000), 1_000), Some(6_000));
        // Not named (the window came in an earlier look): the window's.
        assert_eq!(refusal_reset(None, Some(7_000), 1_000), Some(7_000));
        // A window that reset already says nothing of this refusal.
        assert_eq!(refusal_reset(None, Some(7_000), 7_000), None);
        assert_eq!(refusal_reset(None, None, 1_000), None);
    }
    use proptest::prelude::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn anthropic_unified_headers_become_five_hour_and_weekly_windows() {
        let w = windows_from_headers(&h(&[
            ("Anthropic-Ratelimit-Unified-5h-Utilization", "0.42"),
            ("anthropic-ratelimit-unified-5h-reset", "1776649200"),
            ("anthropic-ratelimit-unified-5h-status", "allowed"),
            ("anthropic-ratelimit-unified-7d-utilization", "1.07"),
            ("anthropic-ratelimit-unified-7d-reset", "1777167600"),
        ]));
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].kind, "five_hour");
        assert!((w[0].used_percent.unwrap() - 42.0).abs() < 1e-9);
        assert_eq!(w[0].resets_at, Some(1_776_649_200_000));
        assert!(w[1].used_percent.unwrap() > 100.0, "utilization can pass 1");
    }

    #[test]
    fn codex_headers_become_windows_named_by_their_length() {
        let w = windows_from_headers(&h(&[
            ("x-codex-primary-used-percent", "12.5"),
            ("x-codex-primary-window-minutes", "300"),
            ("x-codex-primary-reset-at", "1704069000"),
            ("x-codex-secondary-used-percent", "80"),
            ("x-codex-secondary-window-minutes", "1440"),
        ]));
        assert_eq!(w[0].kind, "five_hour");
        assert_eq!(w[0].resets_at, Some(1_704_069_000_000));
        assert_eq!(w[1].kind, "secondary");
    }

    #[test]
    fn malformed_headers_are_left_out_not_guessed() {
        let w = windows_from_headers(&h(&[
            ("anthropic-ratelimit-unified-5h-utilization", "lots"),
            ("anthropic-ratelimit-unified-5h-reset", "-5"),
            ("x-codex-primary-used-percent", "NaN"),
        ]));
        assert!(w.is_empty());
    }

    #[test]
    fn an_anthropic_429_is_a_usage_limit_only_with_unified_status_rejected() {
        let body = br#"{"type":"error","error":{"type":"rate_limit_error","message":"x"}}"#;
        let limited = h(&[
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", "1800000000"),
            ("anthropic-ratelimit-unified-5h-status", "rejected"),
            ("anthropic-ratelimit-unified-5h-reset", "1800000000"),
        ]);
        let hit = classify_refusal(Api::Anthropic, 429, &limited, body, 0).unwrap();
        assert_eq!(hit.kind, "five_hour");
        assert_eq!(hit.resets_at, Some(1_800_000_000_000));
        assert_eq!(classify_refusal(Api::Anthropic, 429, &[], body, 0), None);
        let overloaded = br#"{"type":"error","error":{"type":"overloaded_error","message":"x"}}"#;
        assert_eq!(
            classify_refusal(Api::Anthropic, 529, &limited, overloaded, 0),
            None
        );
        assert_eq!(
            classify_refusal(Api::Anthropic, 200, &limited, b"", 0),
            None
        );
    }

    #[test]
    fn a_codex_usage_limit_reached_body_names_its_reset() {
        let body = br#"{"error":{"type":"usage_limit_reached","resets_at":1800000000,"resets_in_seconds":60}}"#;
        let hit = classify_refusal(Api::Responses, 429, &[], body, 0).unwrap();
        assert_eq!(hit.resets_at, Some(1_800_000_000_000));
        let older = br#"{"error":{"type":"usage_limit_reached","resets_in_seconds":60}}"#;
        let hit = classify_refusal(Api::Responses, 429, &[], older, 1000).unwrap();
        assert_eq!(hit.resets_at, Some(61_000));
        let other = br#"{"error":{"type":"rate_limit_exceeded"}}"#;
        assert_eq!(classify_refusal(Api::Responses, 429, &[], other, 0), None);
        assert_eq!(
            classify_refusal(Api::Responses, 429, &[], b"{not json", 0),
            None
        );
    }

    #[test]
    fn a_chat_429_with_retry_after_is_limited_until_then() {
        let hit =
            classify_refusal(Api::Chat, 429, &h(&[("Retry-After", "30")]), b"", 1000).unwrap();
        assert_eq!(hit.resets_at, Some(31_000));
        assert_eq!(classify_refusal(Api::Chat, 429, &[], b"", 0), None);
    }

    fn clock(hour: u8, minute: u8, zone: Option<&str>) -> ResetText {
        ResetText::Clock {
            hour,
            minute,
            zone: zone.map(str::to_owned),
        }
    }

    #[test]
    fn every_known_limit_text_gives_its_reset() {
        assert_eq!(
            parse_limit_text("You've hit your limit · resets 4pm (Europe/Berlin)"),
            Some(clock(16, 0, Some("Europe/Berlin")))
        );
        assert_eq!(
            parse_limit_text("You've hit your session limit · resets 4pm (Europe/Berlin)"),
            Some(clock(16, 0, Some("Europe/Berlin")))
        );
        assert_eq!(
            parse_limit_text("5-hour limit reached ∙ resets 5:30am"),
            Some(clock(5, 30, None))
        );
        assert_eq!(
            parse_limit_text("Claude usage limit reached. Your limit will reset at 12am."),
            Some(clock(0, 0, None))
        );
        assert_eq!(
            parse_limit_text(
                "■ You've hit your usage limit. Upgrade to Pro or try again at 3:28 PM."
            ),
            Some(clock(15, 28, None))
        );
        assert_eq!(
            parse_limit_text("Claude AI usage limit reached|1767225600"),
            Some(ResetText::Epoch(1_767_225_600))
        );
        assert_eq!(
            parse_limit_text(
                "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later."
            ),
            Some(ResetText::Unknown)
        );
        assert_eq!(parse_limit_text("everything is fine, resets 4pm"), None);
        assert_eq!(
            parse_limit_text("Limite atteinte · réinitialisation à 16h"),
            None,
            "an unknown language is not guessed at"
        );
        assert_eq!(
            parse_limit_text("You've hit your limit · resets soon"),
            Some(ResetText::Unknown)
        );
    }

    #[test]
    fn a_clock_reset_is_the_next_time_it_shows_in_its_zone_and_an_unknown_zone_is_unknown() {
        // 2026-12-02T10:00:00Z
        let now = parse_rfc3339_ms("2026-12-02T10:00:00Z").unwrap();
        let zones = |z: Option<&str>| match z {
            None => Some(0),
            Some("Europe/Berlin") => Some(3600),
            _ => None,
        };
        let at = resolve_reset(&clock(16, 0, Some("Europe/Berlin")), now, &zones).unwrap();
        assert_eq!(at, parse_rfc3339_ms("2026-12-02T15:00:00Z").unwrap());
        let at = resolve_reset(&clock(5, 30, None), now, &zones).unwrap();
        assert_eq!(
            at,
            parse_rfc3339_ms("2026-12-03T05:30:00Z").unwrap(),
            "already past today: tomorrow"
        );
        assert_eq!(
            resolve_reset(&clock(5, 30, Some("Mars/Olympus")), now, &zones),
            None
        );
        assert_eq!(resolve_reset(&ResetText::Unknown, now, &zones), None);
    }

    #[test]
    fn resets_in_the_past_are_over_and_resets_beyond_thirty_days_are_not_believed() {
        assert_eq!(judge_reset(Some(5), 10), ResetVerdict::Passed);
        assert_eq!(judge_reset(Some(20), 10), ResetVerdict::At(20));
        assert_eq!(
            judge_reset(Some(10 + MAX_RESET_AHEAD_MS + 1), 10),
            ResetVerdict::Unknown
        );
        assert_eq!(judge_reset(None, 10), ResetVerdict::Unknown);
    }

    fn facts() -> ContinueFacts {
        ContinueFacts {
            now_ms: 1000,
            since_ms: 0,
            continue_at: Some(500),
            auto_continue: true,
            stopped_mid_task: true,
            mid_turn: false,
            person_typed_since: false,
            hibernated: false,
            wake_to_continue: false,
            already_continued: false,
            budget_spent: false,
        }
    }

    #[test]
    fn the_continuation_is_typed_once_after_the_reset_and_never_mid_turn_or_after_a_person() {
        assert_eq!(
            decide_continue(&facts()),
            ContinueDecision::Type { wake_first: false }
        );
        let early = ContinueFacts {
            now_ms: 100,
            ..facts()
        };
        assert_eq!(decide_continue(&early), ContinueDecision::WaitUntil(500));
        let busy = ContinueFacts {
            mid_turn: true,
            ..facts()
        };
        assert_eq!(decide_continue(&busy), ContinueDecision::WaitForTurnEnd);
        let typed = ContinueFacts {
            person_typed_since: true,
            ..facts()
        };
        assert!(matches!(
            decide_continue(&typed),
            ContinueDecision::StandDown(_)
        ));
        let idle = ContinueFacts {
            stopped_mid_task: false,
            ..facts()
        };
        assert!(matches!(
            decide_continue(&idle),
            ContinueDecision::StandDown(_)
        ));
        let spent = ContinueFacts {
            budget_spent: true,
            ..facts()
        };
        assert_eq!(
            decide_continue(&spent),
            ContinueDecision::StandDown("the cost budget is spent")
        );
        let twice = ContinueFacts {
            already_continued: true,
            ..facts()
        };
        assert!(matches!(
            decide_continue(&twice),
            ContinueDecision::StandDown(_)
        ));
        let asleep = ContinueFacts {
            hibernated: true,
            ..facts()
        };
        assert!(matches!(
            decide_continue(&asleep),
            ContinueDecision::StandDown(_)
        ));
        let wake = ContinueFacts {
            hibernated: true,
            wake_to_continue: true,
            ..facts()
        };
        assert_eq!(
            decide_continue(&wake),
            ContinueDecision::Type { wake_first: true }
        );
        // An unknown reset waits for a source that may know it (the screen
        // comes first, the transcript seconds later), then stands down.
        let unknown = ContinueFacts {
            continue_at: None,
            since_ms: 1000,
            now_ms: 1500,
            ..facts()
        };
        assert_eq!(
            decide_continue(&unknown),
            ContinueDecision::WaitUntil(1000 + UNKNOWN_RESET_GRACE_MS)
        );
        let still_unknown = ContinueFacts {
            now_ms: 1000 + UNKNOWN_RESET_GRACE_MS,
            ..unknown
        };
        assert!(matches!(
            decide_continue(&still_unknown),
            ContinueDecision::StandDown(_)
        ));
    }

    #[test]
    fn a_limited_account_is_not_used_before_its_reset_or_with_an_unknown_one() {
        assert!(!account_may_be_used(Some(100), false, 50));
        assert!(account_may_be_used(Some(100), false, 100));
        assert!(account_may_be_used(None, false, 0));
        assert!(!account_may_be_used(None, true, 0));
    }

    fn lim(source: &str, resets_at: Option<i64>) -> SessionLimit {
        SessionLimit {
            kind: "five_hour".into(),
            resets_at,
            source: source.into(),
            since_ms: 1,
            continue_at: None,
            stopped_mid_task: false,
            continued: false,
            account: None,
        }
    }

    #[test]
    fn the_proxy_s_reset_wins_over_the_screen_and_a_known_reset_is_never_forgotten() {
        let screen = lim("screen", Some(50));
        let proxy = lim("proxy", Some(60));
        assert_eq!(fold_limit(Some(&screen), proxy.clone()).resets_at, Some(60));
        assert_eq!(fold_limit(Some(&proxy), screen.clone()).resets_at, Some(60));
        let unknown = lim("hook", None);
        assert_eq!(
            fold_limit(Some(&proxy), unknown.clone()).resets_at,
            Some(60)
        );
        assert_eq!(
            fold_limit(Some(&unknown), screen.clone()).resets_at,
            Some(50)
        );
        let done = SessionLimit {
            continued: true,
            ..proxy.clone()
        };
        let again = lim("proxy", Some(99));
        assert_eq!(
            fold_limit(Some(&done), again).resets_at,
            Some(99),
            "a second refusal is a new limit"
        );
    }

    #[test]
    fn clock_text_is_the_wall_clock_at_the_offset() {
        let t = parse_rfc3339_ms("2026-12-02T15:00:00Z").unwrap();
        assert_eq!(clock_text(t, 0), "15:00");
        assert_eq!(clock_text(t, 3_600_000), "16:00");
        assert_eq!(clock_text(t, -16 * 3_600_000), "23:00");
    }

    #[test]
    fn rfc3339_times_parse_with_fractions_and_offsets() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(parse_rfc3339_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(
            parse_rfc3339_ms("2026-12-02T10:00:00Z"),
            Some(1_796_205_600_000)
        );
        assert_eq!(parse_rfc3339_ms("2026-12-02T10:00"), None);
    }

    proptest! {
        #[test]
        fn continue_at_is_within_the_delay_and_thirty_seconds_of_jitter(
            reset in 0i64..4_000_000_000_000, delay in 0u64..3600, id in "[a-z0-9]{1,12}"
        ) {
            let at = continue_at(Some(reset), delay, MAX_JITTER_MS, &id).unwrap();
            let base = reset + delay as i64 * 1000;
            prop_assert!(at >= base && at < base + MAX_JITTER_MS);
            prop_assert_eq!(continue_at(Some(reset), delay, MAX_JITTER_MS, &id), Some(at));
            prop_assert_eq!(continue_at(Some(reset), delay, 0, &id), Some(base));
        }

        #[test]
        fn limit_text_parsing_never_panics(s in ".{0,80}") {
            let _ = parse_limit_text(&s);
            let _ = parse_limit_text(&format!("You've hit your limit · resets {s}"));
        }

        #[test]
        fn a_resolved_clock_reset_is_within_a_day(h in 0u8..24, m in 0u8..60, now in 0i64..4_000_000_000_000, off in -50_400i32..50_400) {
            let at = resolve_reset(&clock(h, m, None), now, &|_| Some(off)).unwrap();
            prop_assert!(at >= now - 60_000 && at <= now + 86_400_000);
        }
    }
}
