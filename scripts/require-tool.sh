#!/usr/bin/env bash
# require-tool.sh PACKAGE COMMAND...: the benchmarks' peers (xmllint, jq, redis). When a COMMAND
# is missing, install the Debian PACKAGE if we can (root with apt-get); otherwise say how, exit 4.
set -uo pipefail
package=$1; shift
missing=0
for command in "$@"; do command -v "$command" >/dev/null || missing=1; done
[ "$missing" = 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "$* not found: installing $package"
    apt-get install -y -q "$package" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get install -y -q "$package" >/dev/null; } \
        || { echo "error: could not install $package"; exit 4; }
else
    echo "error: $* not found; install it (sudo apt-get install $package) and rerun make"; exit 4
fi
