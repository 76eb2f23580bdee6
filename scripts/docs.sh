#!/usr/bin/env bash
# Builds the DocC documentation of the library and of each integration product, and fails on any
# warning (a broken symbol link, an undocumented parameter, a bad article link). Every package
# trait is on, as the integrations need theirs. Output lands in
# .build/plugins/Swift-DocC/outputs/<Target>.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(LongThreads LongThreadsServiceLifecycle LongThreadsLogging LongThreadsMetrics LongThreadsTracing LongThreadsTestKit)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
for target in "${targets[@]}"; do
    echo "== docs: $target"
    if ! swift package --enable-all-traits generate-documentation --target "$target" --warnings-as-errors >"$log" 2>&1; then
        status=1
    fi
    # A dependency's SwiftPM notice is not ours; every other warning is.
    if grep -E "(warning|error):" "$log" | grep -v "found [0-9]* file(s) which are unhandled" ; then
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "docs: no warnings"
exit "$status"
