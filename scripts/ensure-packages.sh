#!/usr/bin/env bash
# Installs the Debian packages that building everything (the daemon example) and testing need,
# when they are missing. Idempotent: installs nothing when all are present. As root with apt-get
# it installs them; otherwise it prints the command to run and fails.
# The library and the demo need none of these: `swift run longthread-demo` builds without them.
set -euo pipefail

# libbsd-dev: pidfile(3), setproctitle(3) for the daemon example. libsystemd-dev: sd_notify(3) for
# the daemon example. libsqlite3-dev: the SQLite example (a C library confined to one thread).
# valgrind: the instruction-count checks of the benchmarks (optional here).
packages=(libbsd-dev libsystemd-dev libsqlite3-dev)

missing=()
for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "== installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "missing Debian packages; run:  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
