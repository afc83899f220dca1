#!/usr/bin/env bash
# The resume of a run paused for approval after N tool rounds, as
# docs/benchmarks.md ("Resume") quotes it: the whole `nexa agent … --resume
# RUN --approve CALL` process, timed by bash's `time` keyword (no helper
# process is timed with it, unlike bench/peers/bench.py, whose wall time
# includes starting Python's subprocess and /usr/bin/time, about 8 ms here).
#
# Usage: bench/resume.sh [runs] [steps] [binary...]
#   runs    timed resumes per binary (default 15)
#   steps   tool rounds before the pause (default 2000)
#   binary  nexa binaries (default: one built here with `make build`); with
#           several (say, before and after a change) the resumes alternate
#           between them, so that each sees the same load
# Each resume starts from its binary's paused store, restored into the run's
# own working directory, so every resume reads and writes the same files.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-15}
steps=${2:-2000}
shift $(($# < 2 ? $# : 2))
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	make -s build
	bins=("$PWD/bin/nexa")
fi
nx=$PWD/bench/peers/add.nx
work=$(mktemp -d -t nexa-bench-resume.XXXXXX)
trap 'rm -rf "$work"' EXIT

python3 - "$work/script.json" "$steps" <<'PY'
import json, sys
n = int(sys.argv[2])
turns = [{"tool_calls": [{"id": f"call_{i + 1}", "name": "add", "arguments": {"a": i, "b": 1}}]} for i in range(n)]
turns.append({"tool_calls": [{"id": "call_confirm", "name": "confirm", "arguments": {}}]})
turns.append({"content": "done"})
json.dump({"model": "scripted", "turns": turns}, open(sys.argv[1], "w"))
PY

# The paused run, made once by each binary (so that each resumes a store of
# its own schema, never paying a migration), kept aside as "pristine-I".
# Every binary's run works in the same directory, $work/run.
declare -a runs_of=()
for i in "${!bins[@]}"; do
	rm -rf "$work/run"
	mkdir "$work/run"
	cd "$work/run"
	set +e
	"${bins[$i]}" agent "$nx" Adder add --provider "script:$work/script.json" --store "$work/run/runs.sqlite3" -q >"$work/paused.json"
	code=$?
	set -e
	if [ "$code" -ne 3 ]; then
		echo "the set-up run of ${bins[$i]} exited $code, not 3 (waiting for approval)" >&2
		exit 1
	fi
	runs_of[$i]=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$work/paused.json")
	cp -a "$work/run" "$work/pristine-$i"
done
echo "paused after $steps rounds: store $(du -sh "$work/pristine-0" | cut -f1)"

# ms CMD...: "wall/CPU" of one process in milliseconds
ms() {
	local TIMEFORMAT='%3R %3U %3S' out
	out=$({ time "$@" >"$work/out.json" 2>"$work/err"; } 2>&1) || {
		echo "resume failed: $(cat "$work/err")" >&2
		exit 1
	}
	awk -v t="$out" 'BEGIN { split(t, f, " "); printf "%.1f/%.1f\n", f[1] * 1000, (f[2] + f[3]) * 1000 }'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A all=()
for _ in $(seq "$runs"); do
	for i in "${!bins[@]}"; do
		cd "$work"
		rm -rf "$work/run"
		cp -a "$work/pristine-$i" "$work/run"
		cd "$work/run"
		all[$i]+="$(ms "${bins[$i]}" agent "$nx" Adder --resume "${runs_of[$i]}" --approve call_confirm \
			--provider "script:$work/script.json" --store "$work/run/runs.sqlite3" -q) "
		grep -q '"status": "completed"' "$work/out.json" || {
			echo "the resume did not complete: $(cat "$work/out.json")" >&2
			exit 1
		}
	done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in "${!bins[@]}"; do
	python3 - "${bins[$i]}" ${all[$i]} <<'PY'
import statistics, sys
bin, runs = sys.argv[1], [tuple(map(float, r.split("/"))) for r in sys.argv[2:]]
w, c = sorted(r[0] for r in runs), sorted(r[1] for r in runs)
print(f"{bin}: resume wall median {statistics.median(w):.1f} ms (least {w[0]:.1f}, most {w[-1]:.1f}), "
      f"CPU median {statistics.median(c):.1f} ms, {len(runs)} resumes")
PY
done
