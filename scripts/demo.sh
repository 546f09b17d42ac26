#!/usr/bin/env bash
# `make demo`: a short tour of ampsctl on the bundled samples. Findings are expected in the
# broken-* samples, so their non-zero exit codes are shown, not treated as failures.
set -euo pipefail
cd "$(dirname "$0")/.."
amps=.venv/bin/ampsctl
valid=$(ls samples/*.xml | grep -v '/broken-')
echo "== ampsctl validate on the valid samples (expect: no findings)"
$amps validate $valid
echo
echo "== ampsctl validate on one broken sample (expect: findings with snippets, exit code 1)"
$amps validate samples/broken-queues.xml || echo "(exit code $?)"
echo
echo "== all broken samples as GitHub annotations"
$amps validate samples/broken-*.xml --format github || echo "(exit code $?)"
echo
echo "== ampsctl config explain SOWT-004"
$amps config explain SOWT-004
echo
echo "== ampsctl config sample | ampsctl validate (the starter config validates clean)"
tmp=$(mktemp -d)
$amps config sample > "$tmp/amps.xml"
$amps validate "$tmp/amps.xml"
rm -rf "$tmp"
echo
echo "== ampsctl filter test (a content filter on two JSON messages)"
printf '%s\n' '{"region":"US","qty":150}' '{"region":"EU","qty":500}' > "${TMPDIR:-/tmp}/ampsctl-demo-orders.jsonl"
$amps filter test "/region = 'US' AND /qty > 100" --data @"${TMPDIR:-/tmp}/ampsctl-demo-orders.jsonl" || echo "(exit code $?: not every message matched)"
rm -f "${TMPDIR:-/tmp}/ampsctl-demo-orders.jsonl"
echo
echo "== ampsctl delta merge (seed 004: two workers update one order)"
echo '{"id":735,"customer":"Patrick","qty":1000,"state":"new"}' | $amps delta merge - <(echo '{"id":735,"inventory":"available"}') <(echo '{"id":735,"credit":"approved"}')
echo
echo "== ampsctl affinity simulate (seed 000's faucet example, Announcements=all)"
$amps affinity simulate --config samples/manifold-affinity-default.xml \
    --events samples/affinity/symbols.events.jsonl --chart
