#!/usr/bin/env bash
# Every core busy while a command runs (issue 44 part 8): one busy loop per
# core at normal priority, started before COMMAND and ended after it, however
# it ends. The suite must pass like this: a race that only shows when the
# machine is loaded is a race in the product (RELIABILITY.md, "Races found by
# load").
#
#   bench/busy_cores.sh [-n LOOPS] -- COMMAND...
#   bench/busy_cores.sh -- cargo test -p hangar --test it
#
# LOOPS defaults to the number of cores (nproc). Prints the load average
# before and after, and exits with COMMAND's status.
set -euo pipefail

loops=$(nproc)
while [ $# -gt 0 ]; do
    case "$1" in
    -n) loops="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [-n LOOPS] -- COMMAND..." >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-n LOOPS] -- COMMAND..." >&2; exit 2; }

pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait "${pids[@]}" 2>/dev/null || true
}
trap stop EXIT INT TERM

for _ in $(seq "$loops"); do
    # A shell arithmetic loop: pure CPU, no memory, no I/O.
    bash -c 'while :; do :; done' &
    pids+=("$!")
done
echo "busy_cores: $loops busy loops (pids ${pids[*]}); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
status=0
"$@" || status=$?
echo "busy_cores: done (exit $status); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
