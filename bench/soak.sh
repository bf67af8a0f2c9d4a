#!/usr/bin/env bash
# Soak: a mixed workload of 50 sessions against one real daemon for N
# minutes, driven through the real CLI (release build), with
# hangar-fake-agent standing in for every agent CLI.
#
#   bench/soak.sh [MINUTES]        (default 10)
#
# Sessions: 20 fake-claude panes over 2 tabs, 10 shell panes, 20 parked
# fake-claude agents. Every step picks one of: send to a pane, ls, status,
# screen, park+unpark, hibernate+wake (of a pane or a parked agent), pin,
# tab rename, new parked + close. Each CLI call is timed end to end
# (including the CLI's own start). At the end: requests, errors (any non-zero
# exit), the slowest request, daemon RSS/fds at start, every minute and at
# the end, and, after `hangar shutdown`, any process of the home left over.
#
# It never touches your own hangar: everything lives in a temp HANGAR_HOME
# that is removed at exit (set SOAK_KEEP=1 to keep it).
set -u

MINUTES="${1:-10}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PROFILE="${SOAK_PROFILE:-release}"   # SOAK_PROFILE=debug uses a debug build
if [ "$PROFILE" = release ]; then
    cargo build --release --workspace --bins --quiet --manifest-path "$ROOT/Cargo.toml" || exit 1
else
    cargo build --workspace --bins --quiet --manifest-path "$ROOT/Cargo.toml" || exit 1
    PROFILE=debug
fi
BIN="$TARGET/$PROFILE/hangar"
FAKE="$TARGET/$PROFILE/hangar-fake-agent"

WORK="$(mktemp -d /tmp/hangar-soak-XXXXXX)"
export HANGAR_HOME="$WORK/home"
export HANGAR_CLAUDE_BIN="$FAKE" HANGAR_SHELL=/bin/sh SHELL=/bin/sh
export CLAUDE_CONFIG_DIR="$WORK/claude" CODEX_HOME="$WORK/codex" HOME="$WORK/user"
export HANGAR_LOG=warn
mkdir -p "$WORK/proj" "$WORK/claude" "$WORK/codex" "$WORK/user"
cd "$WORK/proj" || exit 1

cleanup() {
    "$BIN" shutdown >/dev/null 2>&1
    sleep 1
    # Anything still carrying this home is a leak: report it, then end it.
    LEFT=0
    for p in /proc/[0-9]*; do
        if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "HANGAR_HOME=$HANGAR_HOME"; then
            LEFT=$((LEFT + 1))
            kill -9 "${p#/proc/}" 2>/dev/null
        fi
    done
    echo "processes of the home left after shutdown: $LEFT"
    [ "${SOAK_KEEP:-0}" = 1 ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

now_us() { echo $(($(date +%s%N) / 1000)); }

REQUESTS=0
ERRORS=0
SLOWEST_US=0
SLOWEST_CMD=""
ERRLOG="$WORK/errors.txt"
# h ARGS...: one timed CLI call; its stdout is in $OUT.
h() {
    local t0 t1 dt
    t0=$(now_us)
    OUT="$("$BIN" "$@" 2>>"$ERRLOG")"
    local rc=$?
    t1=$(now_us)
    dt=$((t1 - t0))
    REQUESTS=$((REQUESTS + 1))
    if [ $rc -ne 0 ]; then
        ERRORS=$((ERRORS + 1))
        echo "  ^ from: hangar $*" >>"$ERRLOG"
    fi
    if [ $dt -gt $SLOWEST_US ]; then
        SLOWEST_US=$dt
        SLOWEST_CMD="hangar $*"
    fi
    return $rc
}

daemon_pid() { "$BIN" --json status | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -1; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

# Setup: 50 sessions.
"$BIN" tab new alpha >/dev/null && "$BIN" tab new beta >/dev/null
PANES=() SHELLS=() PARKED=()
for i in $(seq 1 10); do
    h --json new --provider claude --tab alpha --title "pane a$i" && PANES+=("$(echo "$OUT" | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p')")
    h --json new --provider claude --tab beta --title "pane b$i" && PANES+=("$(echo "$OUT" | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p')")
    h --json new --provider shell --tab beta --title "shell $i" && SHELLS+=("$(echo "$OUT" | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p')")
done
for i in $(seq 1 20); do
    h --json new --provider claude --tab alpha --parked --title "parked $i" && PARKED+=("$(echo "$OUT" | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p')")
done
DAEMON="$(daemon_pid)"
SETUP_REQUESTS=$REQUESTS SETUP_ERRORS=$ERRORS
REQUESTS=0 ERRORS=0 SLOWEST_US=0 SLOWEST_CMD=""
sleep 2
RSS0="$(rss_kib "$DAEMON")" FDS0="$(fds "$DAEMON")"
echo "soak: ${#PANES[@]} agent panes, ${#SHELLS[@]} shell panes, ${#PARKED[@]} parked; setup requests $SETUP_REQUESTS, errors $SETUP_ERRORS"
echo "soak: daemon pid $DAEMON rss ${RSS0} KiB fds $FDS0; running $MINUTES min"

pick() { local -n arr=$1; echo "${arr[$((RANDOM % ${#arr[@]}))]}"; }
END=$(($(date +%s) + MINUTES * 60))
NEXT_SAMPLE=$(($(date +%s) + 60))
STEP=0
while [ "$(date +%s)" -lt "$END" ]; do
    STEP=$((STEP + 1))
    case $((RANDOM % 12)) in
    0 | 1) h send "$(pick PANES)" "soak step $STEP" >/dev/null ;;
    2) h --json ls >/dev/null ;;
    3) h --json status >/dev/null ;;
    4) h screen "$(pick PANES)" >/dev/null ;;
    5) id="$(pick PANES)"; h park "$id" >/dev/null; h unpark "$id" >/dev/null ;;
    6) id="$(pick PANES)"; h hibernate "$id" >/dev/null; h wake "$id" >/dev/null ;;
    7) id="$(pick PARKED)"; h wake "$id" >/dev/null; h hibernate "$id" >/dev/null ;;
    8) id="$(pick PARKED)"; h pin "$id" >/dev/null; h unpin "$id" >/dev/null ;;
    9) h tab rename beta "beta" >/dev/null ;;
    10) h --json new --provider shell --parked --tab alpha --title "temp $STEP" &&
        h close "$(echo "$OUT" | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p')" --yes >/dev/null ;;
    11) h send "$(pick SHELLS)" "echo soak $STEP" >/dev/null ;;
    esac
    if [ "$(date +%s)" -ge "$NEXT_SAMPLE" ]; then
        echo "soak: t=$(( (NEXT_SAMPLE - END) / 60 + MINUTES ))min requests $REQUESTS errors $ERRORS rss $(rss_kib "$DAEMON") KiB fds $(fds "$DAEMON")"
        NEXT_SAMPLE=$((NEXT_SAMPLE + 60))
    fi
done
RSS1="$(rss_kib "$DAEMON")" FDS1="$(fds "$DAEMON")"
LIVE="$("$BIN" --json status | tr -d ' \n' | sed -n 's/.*"live":\([0-9]*\).*/\1/p' | head -1)"
echo "soak result: profile=$PROFILE minutes=$MINUTES sessions=50 requests=$REQUESTS errors=$ERRORS" \
    "slowest_ms=$((SLOWEST_US / 1000)) slowest=\"$SLOWEST_CMD\"" \
    "daemon_rss_kib start=$RSS0 end=$RSS1 growth=$((RSS1 - RSS0)) fds start=$FDS0 end=$FDS1 live_at_end=$LIVE"
if [ "$ERRORS" -gt 0 ]; then
    echo "first errors:"
    head -20 "$ERRLOG"
fi
