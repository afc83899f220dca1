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
# The same rows for two floors, both built here as `make build` builds nexa
# and alternated run by run with the nexa binaries, so that all see the same
# minutes:
#   floor       a Go program that does nothing
#   deps-floor  a Go program that does nothing but links every non-standard
#               package nexa links (a blank import of each package
#               `go list -deps ./cmd/nexa` names, less nexa's own and those
#               under an internal/ directory, which their importers pull in);
#               it pays the Go runtime and every dependency's init, which
#               every nexa command pays too
# then a table of the medians with what each nexa binary adds over the
# dependencies floor. Also prints the load average, to be written beside
# the figures. The floor programs are built in a scratch directory with a
# copy of go.mod and go.sum, from the module cache only (GOPROXY=off,
# GOFLAGS=-mod=mod); nothing is written into the repository.
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
# labels: the file name, or the last two path elements when two binaries
# share a name (OLD/nexa and bin/nexa)
labels=(floor deps-floor)
for b in "${bins[@]}"; do
	l=${b##*/}
	for o in "${bins[@]}"; do
		if [ "$o" != "$b" ] && [ "${o##*/}" = "$l" ]; then l=$(basename "$(dirname "$b")")/$l; fi
	done
	labels+=("$l")
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The two floors, linked as `make build` links nexa (no cgo, no symbols).
floorbuild() { (cd "$1" && CGO_ENABLED=0 GOPROXY=off GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o "$2" .); }
mkdir "$work/floor" "$work/deps-floor"
printf 'module nexafloor\n\ngo %s\n' "$(go list -m -f '{{.GoVersion}}')" > "$work/floor/go.mod"
printf 'package main\n\nfunc main() {}\n' > "$work/floor/main.go"
floorbuild "$work/floor" "$work/floor.bin"
sed 's/^module .*/module nexafloor/' go.mod > "$work/deps-floor/go.mod"
cp go.sum "$work/deps-floor/go.sum"
mod=$(go list -m)
{
	printf '// Links what nexa links, less nexa itself, and does nothing.\npackage main\n\nimport (\n'
	go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./cmd/nexa |
		awk -v mod="$mod" '$0 != mod && index($0, mod "/") != 1 && $0 !~ /(^|\/)internal(\/|$)/ { printf "\t_ \"%s\"\n", $0 }'
	printf ')\n\nfunc main() {}\n'
} > "$work/deps-floor/main.go"
floorbuild "$work/deps-floor" "$work/deps-floor.bin"
echo "dependencies floor: $(grep -c '^	_ ' "$work/deps-floor/main.go") packages imported"
bins=("$work/floor.bin" "$work/deps-floor.bin" "${bins[@]}")
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
# each binary runs in a working directory of its own, so that each has a
# store of its own: what one binary leaves in a store when it closes it
# (its write-ahead log or none) is what its own next run finds
for i in "${!bins[@]}"; do mkdir "$work/dir$i" && cp add.nx model.json "$work/dir$i/"; done

# wall and CPU (user + system) time of one process in milliseconds, from
# bash's own `time` keyword, so that no helper process is timed with it
ms() {
	local TIMEFORMAT='%3R %3U %3S' out
	out=$({ time "$@" >/dev/null 2>&1; } 2>&1) || true
	awk -v t="$out" 'BEGIN { split(t, f, " "); printf "%.1f/%.1f\n", f[1] * 1000, (f[2] + f[3]) * 1000 }'
}

# measure NAME ARGS...: runs "BIN ARGS..." for every binary, alternating
# between the binaries run after run, prints each one's median and least,
# and keeps the medians for the table at the end (in $work/medians)
measure() {
	local name=$1
	shift
	local b i
	for i in "${!bins[@]}"; do (cd "$work/dir$i" && "${bins[$i]}" "$@" >/dev/null 2>&1) || true; done # warm-up
	local -A all=()
	for _ in $(seq "$runs"); do
		for i in "${!bins[@]}"; do all[$i]+="$(cd "$work/dir$i" && ms "${bins[$i]}" "$@") "; done
	done
	for i in "${!bins[@]}"; do
		printf '%s\n' ${all[$i]} | tr / ' ' | awk -v name="$name" -v bin="${labels[$i]}" -v i="$i" -v keep="$work/medians" '
			function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
			{ w[NR] = $1; c[NR] = $2 }
			END { sort(w, NR); sort(c, NR); m = int((NR + 1) / 2)
			      printf "%-32s %-10s wall median %6.1f ms, least %6.1f ms; CPU median %6.1f ms (%d runs)\n", name, bin, w[m], w[1], c[m], NR
			      printf "%s\t%d\t%.1f\t%.1f\n", name, i, w[m], c[m] >> keep }'
	done
}

# table: one row per command; the two floors, then each nexa binary's
# median wall (CPU) and what it adds over the dependencies floor
table() {
	awk -F '\t' -v labels="${labels[*]}" '
		BEGIN { nl = split(labels, l, " ") }
		{ if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }; w[$1, $2] = $3; c[$1, $2] = $4 }
		END {
			printf "\n| median wall (CPU), ms | floor | deps-floor |"
			for (i = 3; i <= nl; i++) printf " %s | %s - deps-floor |", l[i], l[i]
			printf "\n| --- | --- | --- |"
			for (i = 3; i <= nl; i++) printf " --- | --- |"
			printf "\n"
			for (k = 1; k <= n; k++) {
				r = order[k]
				printf "| %s | %.1f (%.1f) | %.1f (%.1f) |", r, w[r, 0], c[r, 0], w[r, 1], c[r, 1]
				for (i = 2; i < nl; i++) printf " %.1f (%.1f) | %+.1f (%+.1f) |", w[r, i], c[r, i], w[r, i] - w[r, 1], c[r, i] - c[r, 1]
				printf "\n"
			}
		}' "$work/medians"
}

inittrace() {
	local i
	for i in "${!bins[@]}"; do
		GODEBUG=inittrace=1 "${bins[$i]}" version 2>&1 >/dev/null | awk -v bin="${labels[$i]}" '
			/^init / { n++; ms += $5; by += $8; a += $10
			           if ($8 > 100000) heavy = heavy sprintf("\n  %s: %d bytes, %d allocs, %s ms", $2, $8, $10, $5) }
			END { printf "init (%s): %d packages, %.1f ms, %d bytes, %d allocs%s\n", bin, n, ms, by, a, heavy }'
	done
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
echo "binaries: ${bins[*]}"
echo "labels: ${labels[*]}"
inittrace
measure "nexa version" version
measure "nexa validate add.nx" validate add.nx
measure "nexa agent (one scripted step)" \
	agent add.nx Adder "Add 2 and 3" --provider script:model.json
table
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
