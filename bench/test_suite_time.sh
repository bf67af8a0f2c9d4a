#!/usr/bin/env bash
# The README test command's cost, before and after a change, on clean
# checkouts with clean target folders (issue 28 step 5).
#
#   bench/test_suite_time.sh REV_BEFORE REV_AFTER [ROUNDS] [--run]
#
# Each round exports both revisions (git archive: a clean checkout) into
# $WORK (default /tmp/hangar-suite-time) and, interleaved so a change in the
# machine's load falls on both alike, times from an empty target folder:
#   bins:  cargo build --workspace --bins
#   norun: cargo test --workspace --no-run      (builds every test target)
# With --run, the last round also times the tests' execution,
#   run:   cargo test --workspace --no-fail-fast   (everything already built;
#          --no-fail-fast: the README command stops at the first failing
#          test binary, and a timing must cover the whole suite)
# which takes 15-20 minutes quiet: run it once per revision.
# Each step's wall, user and sys CPU (GNU time) and the load average before
# and after go to $WORK/<rev>-<round>-<step>.time; the cargo output (with
# every test binary's "finished in") to the matching .log.
# REV_BEFORE "-" times REV_AFTER alone (its figures beside a before side
# measured earlier on the same machine).
set -euo pipefail
before=${1:?REV_BEFORE}
after=${2:?REV_AFTER}
rounds=${3:-1}
run=${4:-}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=${WORK:-/tmp/hangar-suite-time}
mkdir -p "$work"
export CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0

step() { # LABEL DIR NAME CMD...
    local label=$1 dir=$2 name=$3
    shift 3
    local out="$work/$label-$name.time"
    echo "load before: $(cat /proc/loadavg)" >"$out"
    (cd "$dir" && CARGO_TARGET_DIR="$dir/target" /usr/bin/time \
        -f "wall %e s  user %U s  sys %S s  maxrss %M KiB" -a -o "$out" \
        "$@" >"$work/$label-$name.log" 2>&1) || echo "exit status $?" >>"$out"
    echo "load after: $(cat /proc/loadavg)" >>"$out"
    echo "$label $name: $(grep wall "$out")"
}

for round in $(seq 1 "$rounds"); do
    for rev in "$before" "$after"; do
        [ "$rev" = - ] && continue
        label="$(git -C "$repo" rev-parse --short "$rev")-$round"
        dir="$work/$label"
        rm -rf "$dir"
        mkdir -p "$dir"
        git -C "$repo" archive "$rev" | tar -x -C "$dir"
        step "$label" "$dir" bins cargo build --workspace --bins
        step "$label" "$dir" norun cargo test --workspace --no-run
        if [ "$run" = --run ] && [ "$round" = "$rounds" ]; then
            step "$label" "$dir" run cargo test --workspace --no-fail-fast
        fi
        if [ "$round" != "$rounds" ] || [ "$run" != --run ]; then
            rm -rf "$dir/target"
        fi
    done
done
