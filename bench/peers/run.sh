#!/usr/bin/env bash
# The N-step workload for nexa, LangGraph JS and the OpenAI Agents SDK JS,
# interleaved; writes bench/peers/results/{results.json,results.md,peers.svg}
# and the section "Against LangGraph JS and the OpenAI Agents SDK JS" of
# docs/benchmarks.md.
#
# Usage: bench/peers/run.sh [-r REPS] [--resume-n N] [--agents-each-max N]
#                           [--no-peers] [--no-docs] [N ...]
#   N ...               step counts (default 10 100 500 2000)
#   -r REPS             repetitions of each (default 3)
#   --resume-n N        steps of the run whose resume is timed (default 2000; 0: none)
#   --agents-each-max N largest N for the Agents SDK saving its state each step
#                       (default 100; that mode is super-linear in N)
#   --no-peers          nexa only
#   --no-docs           leave docs/benchmarks.md alone
#
# Needs go and python3; the peers need node (>= 20) and npm. The peers are
# installed into a scratch folder (mktemp -d) from package.json, never into
# the repository; if node is missing or the install fails, the script says so
# and still measures nexa, with the reason written beside the figures.
# BENCH_KEEP=1 keeps the scratch folder; BENCH_JS_DIR=DIR reuses the peers
# installed in DIR by an earlier run (its scratch folder's js/, kept with
# BENCH_KEEP=1) instead of installing them again (building better-sqlite3
# from source takes minutes when no prebuilt binary can be fetched).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

reps=3 resume_n=2000 each_max=100 peers=1 docs=1 ns=()
while [ $# -gt 0 ]; do
	case $1 in
	-r) reps=$2; shift 2 ;;
	--resume-n) resume_n=$2; shift 2 ;;
	--agents-each-max) each_max=$2; shift 2 ;;
	--no-peers) peers=0; shift ;;
	--no-docs) docs=0; shift ;;
	-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) case $1 in *[!0-9]* | '' | 0) echo "run.sh: N must be a whole number > 0, not '$1'" >&2; exit 2 ;; esac
		ns+=("$1"); shift ;;
	esac
done
[ ${#ns[@]} -gt 0 ] || ns=(10 100 500 2000)
for tool in go python3; do
	command -v $tool >/dev/null || { echo "run.sh: $tool is needed" >&2; exit 2; }
done

scratch=$(mktemp -d -t nexa-bench-peers.XXXXXX)
if [ "${BENCH_KEEP:-}" = 1 ]; then
	echo "run.sh: scratch folder kept: $scratch" >&2
else
	trap 'rm -rf "$scratch"' EXIT
fi

echo "== building nexa" >&2
(cd "$repo" && go build -o "$scratch/nexa" ./cmd/nexa)

notes=() js="" versions="nexa $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo unknown)"
skip() {
	echo "run.sh: PEERS SKIPPED: $1" >&2
	notes+=(--note "The peers were skipped: $1")
}
if [ $peers = 0 ]; then
	skip "run with --no-peers."
elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	skip "node and npm are not installed."
elif [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
	skip "node $(node --version) is older than 20."
else
	if [ -n "${BENCH_JS_DIR:-}" ]; then
		echo "== reusing the peers installed in $BENCH_JS_DIR" >&2
		ln -s "$(cd "$BENCH_JS_DIR" && pwd)" "$scratch/js"
		cmp -s "$here/package.json" "$scratch/js/package.json" || { echo "run.sh: $BENCH_JS_DIR/package.json differs from bench/peers/package.json" >&2; exit 2; }
		cp "$here/langgraph.mjs" "$here/agents.mjs" "$scratch/js/"
		install() { true; }
	else
		echo "== installing the peers into $scratch/js (pinned in bench/peers/package.json)" >&2
		mkdir "$scratch/js"
		cp "$here/package.json" "$here/langgraph.mjs" "$here/agents.mjs" "$scratch/js/"
		install() { cd "$scratch/js" && npm install --no-audit --no-fund --loglevel=error; }
	fi
	if ! (install) >"$scratch/npm.log" 2>&1; then
		tail -n 20 "$scratch/npm.log" >&2
		skip "npm install failed ($(grep -m1 -i 'err' "$scratch/npm.log" || echo 'see its log'))."
	elif ! (cd "$scratch/js" && node langgraph.mjs run 1 "$scratch/smoke-lg" && node agents.mjs run 1 "$scratch/smoke-ag") >"$scratch/smoke.log" 2>&1; then
		tail -n 20 "$scratch/smoke.log" >&2
		skip "the installed peers do not run (a one-step smoke run failed: $(grep -m1 -i 'error' "$scratch/smoke.log" || echo 'see its log'))."
	else
		js="$scratch/js"
		v() { node -p "require('$scratch/js/node_modules/$1/package.json').version"; }
		versions="$versions; node $(node --version); @langchain/langgraph $(v @langchain/langgraph), @langchain/langgraph-checkpoint-sqlite $(v @langchain/langgraph-checkpoint-sqlite), better-sqlite3 $(v better-sqlite3); @openai/agents $(v @openai/agents)"
	fi
fi

args=(--nexa "$scratch/nexa" --js "$js" --work "$scratch/work" --out "$here/results"
	--reps "$reps" --resume-n "$resume_n" --agents-each-max "$each_max" --versions "$versions")
[ $docs = 1 ] && args+=(--docs "$repo/docs/benchmarks.md")
echo "== measuring: N = ${ns[*]}, $reps repetitions" >&2
python3 "$here/bench.py" "${args[@]}" ${notes[@]+"${notes[@]}"} "${ns[@]}"
