#!/usr/bin/env bash
# Fuzzes the parsers that meet untrusted bytes, with libFuzzer and AddressSanitizer, for a bounded
# time each (as OSS-Fuzz projects do in CI):
#   http-response    Examples/AFNetworking/AFHTTPResponseParser.swift (Fuzz/HTTPResponseParser)
#   daemon-request   Examples/Daemon/Sources/{LineSplitter,DaemonRequest}.swift (Fuzz/DaemonRequest)
# Each harness checks invariants (one read, pieces and byte by byte agree; bodies have their
# declared length; replies are one bounded line) and traps when one breaks.
#
#   scripts/fuzz.sh                 # both targets, 60 s each
#   FUZZ_SECONDS=300 scripts/fuzz.sh http-response
#
# Needs only a Swift toolchain with libFuzzer (swift.org's Linux toolchains: swiftc
# -sanitize=fuzzer). Seeds are in Fuzz/<target>/corpus; new inputs go to a scratch corpus under
# .build/fuzz, never into the repository. Exits non-zero on a finding (crash, leak, timeout,
# out-of-memory, broken invariant), leaving the input in .build/fuzz/<target>/artifacts.
set -euo pipefail
# The Swift runtime's backtracer would run inside AddressSanitizer's crash report: off.
export SWIFT_BACKTRACE=enable=no

cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
out=.build/fuzz
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(http-response daemon-request)

sources_for() {
    case "$1" in
        http-response) echo "Examples/AFNetworking/AFHTTPResponseParser.swift Examples/AFNetworking/AFHTTPResponse.swift Fuzz/HTTPResponseParser/Harness.swift" ;;
        daemon-request) echo "Examples/Daemon/Sources/LineSplitter.swift Examples/Daemon/Sources/DaemonRequest.swift Fuzz/DaemonRequest/Harness.swift" ;;
        *) echo "unknown target: $1 (http-response, daemon-request)" >&2; return 64 ;;
    esac
}

seeds_for() {
    case "$1" in
        http-response) echo Fuzz/HTTPResponseParser/corpus ;;
        daemon-request) echo Fuzz/DaemonRequest/corpus ;;
    esac
}

status=0
for target in "${targets[@]}"; do
    sources=$(sources_for "$target")
    work="$out/$target"
    rm -rf "$work/artifacts"
    mkdir -p "$work/corpus" "$work/artifacts"
    echo "== $target: building"
    # shellcheck disable=SC2086 # the source list is split on purpose
    # (gold's "Cannot export local symbol '__asan_…'" warnings are noise, filtered out.)
    swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name "Fuzz_${target//-/_}" \
        $sources -o "$work/fuzzer" 2>&1 | { grep -v "Cannot export local symbol" || true; }
    echo "== $target: fuzzing for $seconds s"
    log="$work/fuzz.log"
    # -error_exitcode/-timeout_exitcode: any finding exits non-zero. The scratch corpus comes
    # first (libFuzzer writes new inputs there); the committed seeds are read only.
    if "$work/fuzzer" "$work/corpus" "$(seeds_for "$target")" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=12000 \
        -error_exitcode=77 -timeout_exitcode=78 -artifact_prefix="$work/artifacts/" \
        -print_final_stats=1 >"$log" 2>&1; then
        echo "== $target: $(grep -E '^Done [0-9]+ runs' "$log" || tail -n 1 "$log"); no finding"
    else
        rc=$?
        status=1
        echo "== $target: FINDING (exit $rc); input in $work/artifacts:" >&2
        ls "$work/artifacts" >&2 || true
        grep -a -E 'ERROR|Fatal error|invariant broken|SUMMARY|Test unit written' "$log" >&2 || tail -n 40 "$log" >&2
    fi
done
exit $status
