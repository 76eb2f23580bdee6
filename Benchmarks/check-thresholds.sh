#!/usr/bin/env bash
# CI's regression check: runs the package-benchmark suite (release build) and compares each
# checked count with its threshold in Thresholds/ (see README.md, "Regression suite"). Fails on a
# regression beyond a tolerance and prints the comparison; a result better than a threshold passes
# with a note (update the threshold on purpose, as README says).
set -uo pipefail
cd "$(dirname "$0")"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift package benchmark thresholds check --no-progress 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

if [ "$status" -ne 0 ] && grep -q "benchmarkThresholdImprovement" "$log" && ! grep -q "WORSE than" "$log"; then
    echo "Better than the checked-in thresholds: not a failure. To keep the gain, update them (Benchmarks/README.md)."
    status=0
fi
if [ "$status" -ne 0 ]; then
    echo "Regression check failed (exit $status): the table above compares each threshold with this run."
    echo "Checked-in thresholds:"
    swift package benchmark thresholds read --no-progress 2>&1 | grep -v '^\[' || true
fi
exit "$status"
