#!/usr/bin/env bash
# Times `nexa runs list` and `nexa runs show --tail` end to end on a
# 50,000-run store (made by BenchmarkList of internal/store/sqlite, kept in a
# scratch directory), with peak memory, for docs/benchmarks.md.
# Usage: bench/runs-list.sh [repeats]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-10}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
go build -o "$scratch/nexa" ./cmd/nexa
store="$scratch/store/runs.sqlite3"
NEXA_BENCH_LIST_STORE="$store" go test -run '^$' -bench 'List|Show' -benchtime 20x -benchmem ./internal/store/sqlite
NEXA_BENCH_LIST_STORE="$store" go test -run '^$' -bench 'RunsList' -benchtime 20x -benchmem ./internal/cli
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# Median wall time, median CPU time (user + system) and median peak RSS of
# reps runs of one command; on a shared machine the CPU time is the steadier
# figure.
measure() {
  local label=$1; shift
  : >"$scratch/all"
  for _ in $(seq "$reps"); do
    /usr/bin/time -f '%e %M %U %S' -o "$scratch/t" "$scratch/nexa" "$@" >/dev/null
    cat "$scratch/t" >>"$scratch/all"
  done
  med() { awk "{print $1}" "$scratch/all" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  printf "%-36s wall %5.0f ms  cpu %5.0f ms  peak %5.1f MiB\n" "$label" \
    "$(med '$1*1000')" "$(med '($3+$4)*1000')" "$(med '$2/1024')"
}
measure "nexa version (start-up alone)" version
measure "runs list" runs list --store "$store"
measure "runs list --json" runs list --json --store "$store"
measure "runs list --status waiting_approval" runs list --status waiting_approval --store "$store"
measure "runs list --limit 0 (all 50,000)" runs list --limit 0 --store "$store"
measure "runs list --limit 0 --json" runs list --limit 0 --json --store "$store"
