#!/usr/bin/env bash
# Start-up cost of the nexa binary, as docs/benchmarks.md ("Start-up")
# quotes it. Usage: bench/startup.sh [runs] [binary...]
#   runs    timed runs of each command (default 20)
#   binary  nexa binaries to measure (default: one built here with
#           `make build`); with several (say, before and after a change) the
#           runs alternate between them, so that each sees the same load
# Prints, for `nexa version`, `nexa validate` of a small file and a one-step
# scripted run (one native tool call, then the answer): the median and the
# least wall time per process, the median CPU time, and the init totals
# that GODEBUG=inittrace=1 reports (per-package work before main;
# allocations do not depend on the machine's load, the milliseconds do).
# The same rows for "floor", a Go program that does nothing (built here),
# give the floor in the same minutes. Also prints the load average, to be
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
printf 'package main\n\nfunc main() {}\n' > "$work/floor.go"
go build -o "$work/floor" "$work/floor.go"
bins=("$work/floor" "${bins[@]}")
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

# wall and CPU (user + system) time of one process in milliseconds, from
# bash's own `time` keyword, so that no helper process is timed with it
ms() {
	local TIMEFORMAT='%3R %3U %3S' out
	out=$({ time "$@" >/dev/null 2>&1; } 2>&1) || true
	awk -v t="$out" 'BEGIN { split(t, f, " "); printf "%.1f/%.1f\n", f[1] * 1000, (f[2] + f[3]) * 1000 }'
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
		printf '%s\n' ${all[$i]} | tr / ' ' | awk -v name="$name" -v bin="${bins[$i]##*/}" '
			function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
			{ w[NR] = $1; c[NR] = $2 }
			END { sort(w, NR); sort(c, NR); m = int((NR + 1) / 2)
			      printf "%-32s %-10s wall median %6.1f ms, least %6.1f ms; CPU median %6.1f ms (%d runs)\n", name, bin, w[m], w[1], c[m], NR }'
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
