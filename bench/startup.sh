#!/usr/bin/env bash
# Start-up cost of the nexa binary, as docs/benchmarks.md ("Start-up")
# quotes it. Usage: bench/startup.sh [runs] [binary]
#   runs    timed runs of each command (default 20)
#   binary  a nexa binary to measure (default: built here with `make build`)
# Prints, for `nexa version`, `nexa validate` of a small file and a one-step
# scripted run (one native tool call, then the answer): the median and the
# least wall time per process, and the init totals that GODEBUG=inittrace=1
# reports (per-package work before main; allocations do not depend on the
# machine's load, the milliseconds do). Also prints the load average, to be
# written beside the figures.
set -euo pipefail
if [ -z "${EPOCHREALTIME:-}" ]; then echo "bench/startup.sh needs bash 5 or later" >&2; exit 2; fi
cd "$(dirname "$0")/.."
runs=${1:-20}
bin=${2:-}
if [ -z "$bin" ]; then
	make -s build
	bin=$PWD/bin/nexa
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat > add.nx <<'NX'
@tool("Add two numbers")
fn add(a: int, b: int): int {
    return a + b;
}

agent Adder uses add {
    prompt: "Add."
}
NX
cat > model.json <<'JSON'
{"turns": [
  {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]},
  {"content": "5"}
]}
JSON

# wall time of one process in milliseconds, read from bash's own clock
# (EPOCHREALTIME, bash 5) so that no helper process is timed with it
ms() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || true
	local t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}

measure() {
	local name=$1
	shift
	"$@" >/dev/null 2>&1 || true # warm-up
	local all=()
	for _ in $(seq "$runs"); do all+=("$(ms "$@")"); done
	printf '%s\n' "${all[@]}" | sort -n | awk -v name="$name" '
		{ v[NR] = $1 }
		END { printf "%-34s median %6.1f ms   least %6.1f ms   (%d runs)\n", name, v[int((NR+1)/2)], v[1], NR }'
}

inittrace() {
	GODEBUG=inittrace=1 "$bin" version 2>&1 >/dev/null | awk '
		/^init / { n++; ms += $5; b += $8; a += $10
		           if ($8 > 100000) heavy = heavy sprintf("\n  %s: %d bytes, %d allocs, %s ms", $2, $8, $10, $5) }
		END { printf "init: %d packages, %.1f ms, %d bytes, %d allocs%s\n", n, ms, b, a, heavy }'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
echo "binary: $bin"
inittrace
measure "nexa version" "$bin" version
measure "nexa validate add.nx" "$bin" validate add.nx
measure "nexa agent (one scripted step)" \
	"$bin" agent add.nx Adder "Add 2 and 3" --provider script:model.json
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
