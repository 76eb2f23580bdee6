#!/usr/bin/env bash
# The test command of README.md: the suite, then the suite under ThreadSanitizer and under
# AddressSanitizer (LeakSanitizer included), each followed by a bounded mixed run of the
# stop-and-teardown stress tool built with the same sanitizer, then the parsers fuzzed (bounded), then the demo built in release mode
# (closures from top-level @MainActor code must run on a LongThread without tripping isolation
# checks there too). Missing Debian packages are installed first (scripts/ensure-packages.sh).
# STRESS_SECONDS sets the length of each stress run (default 45). Under a sanitizer one
# million-queued cycle alone takes about 12 s on 2 vCPUs (3 cycles in 35 s under ThreadSanitizer, the
# loop thread running throughout), so the hang watchdog there allows 60 s: it is there to catch a
# cycle that never ends, and a deadlocked one never does.
# XCTest's own runner is disabled: there are no XCTests, and LeakSanitizer reports its leaks.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's header carries the seconds since the script began: the log then shows where time goes.
began=$SECONDS
step() { echo "== $1 (+$((SECONDS - began)) s)"; }

# The daemon example and its tests need Debian packages: install them if missing (as root), or
# print the command to run.
bash scripts/ensure-packages.sh

# Tests run one at a time, and the examples' end-to-end tests (child daemons, python3 servers) in a
# process of their own. Many tests block their thread for a while (joins, latches, child processes);
# run side by side, a few of them take every thread of the cooperative pool (one per core: two here)
# and the async tests of the same run, which wait on that pool with bounded timeouts, fail. Seen under
# ThreadSanitizer and on a loaded machine; serial, the same suites pass. Concurrency is tested inside
# each test, not between tests.
# Each run of tests has a time limit (TEST_TIME_LIMIT seconds, default 600: the slowest, the
# library's suites under ThreadSanitizer, take ~80 s here). A run still going then is hung:
# scripts/watchdog.sh prints every thread's backtrace and ends it, so a hang fails in minutes and
# names its culprit instead of eating CI's budget. Output is line-buffered (stdbuf) so the log
# shows the last test that started.
guarded() {
    bash scripts/watchdog.sh "${TEST_TIME_LIMIT:-600}" stdbuf -oL -eL "$@"
}

# Every package trait on: the integrations, the stress tool and the daemon example need theirs
# (Package.swift; off by default so that a user of the core alone fetches nothing else).
suites() {
    swift build --build-tests --enable-all-traits "$@"
    guarded swift test --skip-build --enable-all-traits --disable-xctest --no-parallel --skip ExamplesTests "$@"
    guarded swift test --skip-build --enable-all-traits --disable-xctest --no-parallel --filter ExamplesTests "$@"
}

step "swift test"
suites
# ThreadSanitizer checks data races; its lock-order (deadlock) detector is off. Seen twice in eight
# runs of the library's suites (once in CI): the detector failed its own internal CHECK
# (sanitizer_deadlock_detector1.cpp:166, "!dd.isHeld", on a mutex the thread had just acquired,
# so not held before), then deadlocked in TSan's own CHECK reporter, holding two threads of the
# cooperative pool; the run never ended. scripts/watchdog.sh's backtraces showed it.
export TSAN_OPTIONS="detect_deadlocks=0${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
step "swift test --sanitize=thread"
suites --sanitize=thread --scratch-path .build-tsan
step "longthread-stress under ThreadSanitizer"
guarded .build-tsan/debug/longthread-stress --duration "${STRESS_SECONDS:-45}" --cycles 1000000 --hang-timeout 60 --quiet
unset TSAN_OPTIONS
step "swift test --sanitize=address"
LSAN_OPTIONS="suppressions=$PWD/scripts/lsan-suppressions.txt:print_suppressions=0" \
    suites --sanitize=address --scratch-path .build-asan
step "longthread-stress under AddressSanitizer"
LSAN_OPTIONS="suppressions=$PWD/scripts/lsan-suppressions.txt:print_suppressions=0" \
    guarded .build-asan/debug/longthread-stress --duration "${STRESS_SECONDS:-45}" --cycles 1000000 --hang-timeout 60 --quiet
# The parsers that meet untrusted bytes, fuzzed for a bounded time each (FUZZ_SECONDS, default 60).
step "fuzz the parsers (libFuzzer + AddressSanitizer)"
bash scripts/fuzz.sh
step "longthread-demo, release build"
swift build -c release --product longthread-demo
guarded swift run -c release --skip-build longthread-demo > /dev/null
echo "demo: ok"
step "all passed"
