#!/usr/bin/env bash
# `make demo`: a short tour of ampsctl validate on the bundled samples.
set -euo pipefail
cd "$(dirname "$0")/.."
amps=.venv/bin/ampsctl
echo "== ampsctl validate on the valid samples (expect: no findings)"
$amps validate samples/valid/*.xml
echo
echo "== ampsctl validate on the broken samples (expect: findings, exit code 1)"
$amps validate samples/broken/*.xml || echo "(exit code $?)"
echo
echo "== the same as SARIF, first lines"
$amps validate samples/broken/*.xml --format sarif | head -n 20 || true
echo
echo "== ampsctl config explain SOWT-004"
$amps config explain SOWT-004
