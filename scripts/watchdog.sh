#!/usr/bin/env bash
# Usage: watchdog.sh SECONDS COMMAND [ARGS...]
# Runs COMMAND; if it has not ended after SECONDS, prints every thread's backtrace of each process
# under it (gdb, batch mode), then kills the tree and exits 124. Why: a hung test otherwise eats
# CI's whole budget and leaves only a half-flushed log (Swift Testing's output to a pipe is
# block-buffered), which names no culprit. The backtraces do.
set -uo pipefail
limit=$1
shift

# The command gets its own process group, so the whole tree can be found and killed.
setsid "$@" &
leader=$!

descendants() {
    local pid=$1 child
    echo "$pid"
    for child in $(pgrep -P "$pid" 2>/dev/null); do
        descendants "$child"
    done
}

(
    sleep "$limit"
    kill -0 "$leader" 2>/dev/null || exit 0
    echo "watchdog: '$*' still running after ${limit}s; backtraces follow" >&2
    # Every process of the tree, taken now: swift-test starts the test binary in a process group
    # of its own, which killing the command's group would leave running (seen: a hung test binary
    # spinning for an hour after its run was ended).
    tree=$(descendants "$leader")
    for pid in $tree; do
        echo "---- pid $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" >&2
        if command -v gdb >/dev/null 2>&1; then
            timeout 120 gdb -p "$pid" -batch -nx -ex "set pagination off" -ex "thread apply all bt 30" 2>&1 \
                | grep -E '^(Thread|#)' >&2
        fi
    done
    kill -KILL -- "-$leader" $tree 2>/dev/null
) &
watcher=$!

wait "$leader"
status=$?
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
# A SIGKILL from the watcher shows as 137: report it as a timeout.
[ "$status" -eq 137 ] && status=124
exit "$status"
