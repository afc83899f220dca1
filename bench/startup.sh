#!/usr/bin/env bash
# Start-up cost of the nexa binary, as docs/benchmarks.md ("Start-up")
# quotes it. Usage: bench/startup.sh [runs] [binary...]
#   runs    timed runs of each command (default 20)
#   binary  nexa binaries to measure (default: one built here with
#           `make build`); with several (say, before and after a change) the
#           runs alternate between them, so that each sees the same load
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
shift || true
bins=()
for b in "$@"; do bins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")"); done
if [ ${#bins[@]} -eq 0 ]; then
	make -s build
	bins=("$PWD/bin/nexa")
fi
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

# measure NAME ARGS...: runs "BIN ARGS..." for every binary, alternating
# between the binaries run after run, and prints each one's median and least
measure() {
	local name=$1
	shift
	local b i
	for b in "${bins[@]}"; do "$b" "$@" >/dev/null 2>&1 || true; done # warm-up
	local -A all=()
	for _ in $(seq "$runs"); do
		for i in "${!bins[@]}"; do all[$i]+="$(ms "${bins[$i]}" "$@") "; done
	done
	for i in "${!bins[@]}"; do
		printf '%s\n' ${all[$i]} | sort -n | awk -v name="$name" -v bin="${bins[$i]##*/}" '
			{ v[NR] = $1 }
			END { printf "%-34s %-14s median %6.1f ms   least %6.1f ms   (%d runs)\n", name, bin, v[int((NR+1)/2)], v[1], NR }'
	done
}

inittrace() {
	local b
	for b in "${bins[@]}"; do
		GODEBUG=inittrace=1 "$b" version 2>&1 >/dev/null | awk -v bin="${b##*/}" '
			/^init / { n++; ms += $5; by += $8; a += $10
			           if ($8 > 100000) heavy = heavy sprintf("\n  %s: %d bytes, %d allocs, %s ms", $2, $8, $10, $5) }
			END { printf "init (%s): %d packages, %.1f ms, %d bytes, %d allocs%s\n", bin, n, ms, by, a, heavy }'
	done
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
echo "binaries: ${bins[*]}"
inittrace
measure "nexa version" version
measure "nexa validate add.nx" validate add.nx
measure "nexa agent (one scripted step)" \
	agent add.nx Adder "Add 2 and 3" --provider script:model.json
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
