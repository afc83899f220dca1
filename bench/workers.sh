#!/usr/bin/env bash
# Worker throughput and wake-up latency on one PostgreSQL database, as
# docs/benchmarks.md ("Workers") quotes them. A throwaway cluster is started
# (scripts/pg-test-cluster.sh) and stopped at the end.
#
#   throughput  RUNS detached runs of bench/peers/add.nx's Adder (a scripted
#               model asking for STEPS native `add` calls, one per turn, then
#               a reply) are submitted with no worker running; then 1, 2 and 4
#               `nexa worker` processes (--concurrency 4 each) are started
#               together and timed until every run is completed: runs/s, and
#               steps/s where a step is one tool call with its model turn.
#   latency     SAMPLES runs stop for the approval of `confirm`; each is
#               approved with `nexa runs approve`, one at a time, while two
#               workers wait that poll only once an hour, so only the
#               LISTEN/NOTIFY wake-up can continue the run. The latency is the
#               call's started_at (the worker, as it starts the tool) minus
#               its decided_at (the approving process, just before its
#               commit), both from the journal.
#
# Usage: [WORKERS='1 2 4'] [REPEAT=3] bench/workers.sh [runs] [steps] [samples] [binary]
#   runs 200, steps 4, samples 30; binary: one built here with `make build`.
#   The settings of WORKERS alternate, REPEAT rounds each (the median is
#   printed, with the range), so that each sees the same load.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
steps=${2:-4}
samples=${3:-30}
nexa=${4:-}
repeat=${REPEAT:-3}
if [ -z "$nexa" ]; then
	make -s build
	nexa=$PWD/bin/nexa
fi
repo=$PWD
work=$(mktemp -d -t nexa-bench-workers.XXXXXX)
pg=$(scripts/pg-test-cluster.sh start)
pgdir=$(sed -n 1p <<<"$pg")
NEXA_STORE=$(sed -n 2p <<<"$pg")
export NEXA_STORE
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	cd /
	"$repo/scripts/pg-test-cluster.sh" stop "$pgdir"
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
cp "$repo/bench/peers/add.nx" .
python3 - "$steps" <<'PY'
import json, sys
n = int(sys.argv[1])
turns = [{"tool_calls": [{"id": f"call_{i + 1}", "name": "add", "arguments": {"a": i, "b": 1}}]} for i in range(n)]
json.dump({"turns": turns + [{"content": "done"}]}, open("steps.json", "w"))
json.dump({"turns": [{"tool_calls": [{"id": "call_confirm", "name": "confirm", "arguments": {}}]}, {"content": "done"}]},
          open("confirm.json", "w"))
PY

completed() { psql "$NEXA_STORE" -Atqc "SELECT count(*) FROM nexa_runs WHERE status = 'completed'"; }
now() { date +%s.%N; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
total=0
: >rates.txt
for _ in $(seq "$repeat"); do
	for w in ${WORKERS:-1 2 4}; do
		for i in $(seq "$runs"); do
			"$nexa" agent add.nx Adder "run $i" --provider script:steps.json --detach -q >/dev/null 2>&1
		done
		total=$((total + runs))
		began=$(now)
		pids=()
		for _ in $(seq "$w"); do
			"$nexa" worker --concurrency 4 --poll-interval 100ms 2>>workers.log &
			pids+=($!)
		done
		until [ "$(completed)" -ge "$total" ]; do sleep 0.02; done
		ended=$(now)
		kill -TERM "${pids[@]}"
		wait "${pids[@]}" || true
		echo "$w $began $ended" >>rates.txt
	done
done
python3 - "$runs" "$steps" rates.txt <<'PY'
import statistics, sys
runs, steps = int(sys.argv[1]), int(sys.argv[2])
by = {}
for line in open(sys.argv[3]):
    w, b, e = line.split()
    by.setdefault(int(w), []).append(runs / (float(e) - float(b)))
for w, r in sorted(by.items()):
    r.sort()
    m = statistics.median(r)
    print(f"{w} worker(s), {runs} runs of {steps} steps, {len(r)} rounds: median {m:.1f} runs/s, {m * steps:.0f} steps/s "
          f"(runs/s {r[0]:.1f}-{r[-1]:.1f})")
PY

# Latency: two workers that only a wake-up moves.
pids=()
for _ in 1 2; do
	"$nexa" worker --poll-interval 1h 2>>workers.log &
	pids+=($!)
done
ids=()
for i in $(seq "$samples"); do
	id=$("$nexa" agent add.nx Adder "confirm $i" --provider script:confirm.json --detach -q 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["run_id"])')
	ids+=("$id")
done
status() { "$nexa" runs show "$1" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])'; }
for id in "${ids[@]}"; do
	until [ "$(status "$id")" = waiting_approval ]; do sleep 0.02; done
	"$nexa" runs approve "$id" call_confirm --approved=true >/dev/null
	until [ "$(status "$id")" = completed ]; do sleep 0.02; done
done
kill -TERM "${pids[@]}"
wait "${pids[@]}" || true
for id in "${ids[@]}"; do "$nexa" runs show "$id" --json; done | python3 -c '
import json, statistics, sys
from datetime import datetime
dec = json.JSONDecoder()
text, i, ms = sys.stdin.read(), 0, []
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i == len(text):
        break
    run, i = dec.raw_decode(text, i)
    e = next(e for e in run["journal"] if e["call_id"] == "call_confirm")
    t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
    ms.append((t(e["started_at"]) - t(e["decided_at"])).total_seconds() * 1000)
ms.sort()
print(f"decision to tool start (NOTIFY, {len(ms)} approvals): median {statistics.median(ms):.1f} ms, "
      f"p90 {ms[int(len(ms) * 0.9) - 1]:.1f} ms, least {ms[0]:.1f} ms, most {ms[-1]:.1f} ms")
'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
