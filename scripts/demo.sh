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
echo
echo "== ampsctl broker run: a local AMPS broker on samples/amps.xml (orders SOW, journal, faucet)"
work=$(mktemp -d)
broker_pids=()
cleanup() { for pid in "${broker_pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
root=$PWD
# start_broker DIR: run the broker in DIR (its ./journal and ./sow go there); DIR/uri names it.
start_broker() {
    mkdir -p "$1"
    (cd "$1" && exec "$root/$amps" broker run --config "$root/samples/amps.xml" --port 0 > uri 2> broker.log) &
    broker_pids+=($!)
    for _ in $(seq 150); do
        [ -s "$1/uri" ] && return
        sleep 0.2
    done
    echo "error: the broker did not start:" >&2; cat "$1/broker.log" >&2; exit 1
}
start_broker "$work/main"
uri=$(cut -d' ' -f2 "$work/main/uri")
echo "listening $uri"
echo
echo "== ampsctl client publish: six orders, each acknowledged as persisted"
$amps client publish "$uri" -t orders --file samples/broker/orders.jsonl
echo
echo "== ampsctl client sow: US orders, largest first"
$amps client sow "$uri" -t orders --filter "/region = 'US'" --orderby "/qty DESC"
echo
echo "== ampsctl client publish --delta: order 3 is filled (only the changed field is sent)"
$amps client publish "$uri" -t orders --delta --data '{"id":3,"status":"filled","qty":75}'
$amps client sow "$uri" -t orders --filter "/id = 3"
echo
echo "== ampsctl client subscribe --bookmark 0: replay the transaction log (headers and data)"
$amps client subscribe "$uri" -t orders --bookmark 0 --count 7 --format json
echo
echo "== ampsctl journal replay: the journal republished into a second, empty broker"
start_broker "$work/replica"
uri2=$(cut -d' ' -f2 "$work/replica/uri")
$amps journal replay "$work/main/journal" --to "$uri2" --speed inf
echo "the replica's SOW (the same state, delta included):"
$amps client sow "$uri2" -t orders --orderby "/id"
echo
echo "== the faucet: two publishers, three subscribers (amps-action-on-manifold-affinity)"
.venv/bin/python scripts/demo_faucet.py "$uri"
echo
echo "== shutting down (SIGTERM: the journal is committed and the SOW file written)"
for pid in "${broker_pids[@]}"; do kill -TERM "$pid"; wait "$pid"; echo "broker $pid exited with code $?"; done
broker_pids=()
echo
echo "== offline: ampsctl sow query on the SOW file and ampsctl journal verify"
$amps sow query "$work/main/sow/orders.json.sow" --filter "/status = 'filled'"
$amps journal verify "$work/main/journal"
