#!/usr/bin/env bash
# Runs the benchmarks quoted in docs/benchmarks.md and prints their raw
# output. Usage: bench/run.sh [count]   (default 3 runs of each)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
run() { go test -run '^$' -count "$count" -benchmem "$@"; }

echo "== compiler"
run -bench 'Compile3000Tools' ./internal/compile
echo "== store: save cost by run length, load"
run -bench 'SaveStep|Load' -benchtime 200x ./internal/store/sqlite
echo "== runs list and show: 50,000 runs, a 2,000-step run (bench/runs-list.sh adds the binary)"
run -bench 'List|Show' -benchtime 20x ./internal/store/sqlite
echo "== runtime: cost per tool round with the SQLite store"
run -bench 'RunStep' -benchtime 5x ./internal/engine
echo "== python tools: one call, and the interpreter alone"
run -bench 'PythonCall|InterpreterStartup' -benchtime 20x ./internal/tools/pytool
