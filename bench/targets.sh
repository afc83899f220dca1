#!/usr/bin/env bash
# Measures every target of docs/benchmarks.md ("Targets at a glance") in one
# run, one after the other, so that the figures share a machine state; the
# load average is printed before and after each part, to be written beside
# the figures. Prints the raw output of each measurement (Go benchmark
# lines, the start-up and runs-list tables, the resume and floor figures).
#
# Usage: bench/targets.sh [quick]
#   quick   fewer repetitions (a check that everything runs, not figures)
#
# Needs go, python3 and /usr/bin/time; uses a tmpfs (/dev/shm) when there is
# one to show the runtime's own cost without the disk. The 3,000-tool
# compile and the corpus are measured here too (issue 12's targets).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=20 benchtime=200x flat=3 py=50 compiles=3
if [ "${1:-}" = quick ]; then
	reps=3 benchtime=10x flat=1 py=5 compiles=1
fi
scratch=$(mktemp -d -t nexa-bench-targets.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
load() { echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%H:%M:%S) UTC)"; }
bench() { go test -run '^$' -benchmem "$@"; }

load
echo "== build"
make -s build
go build -o "$scratch/nexa" ./cmd/nexa

echo "== floor (one 4 KiB write + fsync; one SQLite WAL commit, synchronous=FULL)"
python3 bench/peers/bench.py --nexa "$scratch/nexa" --work "$scratch/peers" --out "$scratch/peers-out" \
	--reps 1 --resume-n 0 10 2>&1 | grep -E '^(load|floor)' || true
python3 - "$scratch/peers-out/results.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["floor"]
print(f"floor: fsync {f['fsync_ms']:.2f} ms (p90 {f['fsync_p90_ms']:.2f}), sqlite commit {f['sqlite_commit_ms']:.2f} ms")
PY
load

echo "== resume of a run paused after 2,000 steps, end to end (bench/resume.sh)"
bench/resume.sh "$reps" 2000 "$scratch/nexa"
load

echo "== start-up"
bench/startup.sh "$reps" "$PWD/bin/nexa"
load

echo "== per tool round (three commits), on disk"
bench -bench 'RunStep/store=sqlite' -benchtime "$benchtime" ./internal/engine
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	echo "== per tool round, store on a tmpfs (the runtime's own cost, no fsync)"
	shm=$(mktemp -d -p /dev/shm nexa-bench.XXXXXX)
	TMPDIR=$shm bench -bench 'RunStep/store=sqlite' -benchtime "$benchtime" ./internal/engine || true
	rm -rf "$shm"
fi
load

echo "== the floor of a step: its three commits alone (io, sql, save; wall, CPU, user, system per step)"
bench -bench 'ThreeCommitsFloor' -benchtime 1000x -count 3 ./internal/store/sqlite
load

echo "== flat: 2,000 rounds, first and last ten rounds from the journal's timestamps (disk)"
bench -bench 'Flat' -benchtime 1x -count "$flat" ./internal/engine
load

echo "== resume of a 2,000-step run, in process"
bench -bench 'Resume' -benchtime 10x ./internal/engine || true
load

echo "== python: a warm call (the default python3, then /usr/bin/python3)"
bench -bench 'PythonCallWarm|InterpreterStartup' -benchtime "${py}x" ./internal/tools/pytool
if [ -x /usr/bin/python3 ]; then
	NEXA_PYTHON=/usr/bin/python3 bench -bench 'PythonCallWarm|InterpreterStartup' -benchtime "${py}x" ./internal/tools/pytool
fi
load

echo "== runs list and show (50,000 runs; a 2,000-step run)"
bench/runs-list.sh "$((reps / 2 > 0 ? reps / 2 : 1))"
load

echo "== compiler: 3,000 tools (10 compiles a run, after one to warm up; -cpu 1, then both cores) and the corpus"
bench -bench 'Compile3000Tools' -benchtime 10x -count "$compiles" -cpu 1,2 ./internal/compile
bench -bench 'CompileCorpus' ./internal/compile
load
