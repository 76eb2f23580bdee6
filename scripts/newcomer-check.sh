#!/usr/bin/env bash
# README's first command on a machine without libbsd's or libsystemd's headers: in a private mount
# namespace, an empty tmpfs hides /usr/include/bsd and /usr/include/systemd, and a scratch build
# folder of its own keeps earlier builds out. Fails if `swift run longthread-demo` fails.
# Needs root (unshare -m); CI runs as root.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch="${NEWCOMER_SCRATCH:-.build-newcomer}"
unshare -m bash -euo pipefail -c '
    for headers in /usr/include/bsd /usr/include/systemd; do
        [ -d "$headers" ] && mount -t tmpfs -o ro tmpfs "$headers"
    done
    if [ -e /usr/include/bsd/libutil.h ]; then echo "libbsd headers still visible" >&2; exit 1; fi
    swift run --scratch-path "$1" longthread-demo > /dev/null
' newcomer-check "$scratch"
echo "newcomer: swift run longthread-demo builds and runs without libbsd or libsystemd headers"
