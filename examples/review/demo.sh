#!/usr/bin/env bash
# Runs the approval example offline with a scripted model: start the run,
# see it wait for approval, approve the pending call and resume it.
set -euo pipefail
nexa=${1:-nexa}
cd "$(dirname "$0")"
nexa=$(command -v "$nexa" || echo "$nexa")
case $nexa in /*) ;; *) nexa=$OLDPWD/$nexa ;; esac

store=$(mktemp -d)/runs.sqlite3
export NEXA_STORE=$store

echo "\$ nexa agent review.nx Reviewer \"Review the supplied change\" --timeout 900 --provider script:model.json"
set +e
out=$("$nexa" agent review.nx Reviewer "Review the supplied change" --timeout 900 --provider script:model.json)
code=$?
set -e
echo "$out"
echo "(exit code $code: 3 means waiting for approval)"
[ "$code" = 3 ] || exit "$code"

run_id=$(printf '%s\n' "$out" | sed -n 's/^  "run_id": "\(run_[^"]*\)".*/\1/p')
call_id=$(printf '%s\n' "$out" | sed -n 's/^ *"call_id": "\([^"]*\)".*/\1/p' | head -n 1)
echo
echo "\$ nexa agent --resume $run_id --approve $call_id"
"$nexa" agent --resume "$run_id" --approve "$call_id"
echo "(exit code $?: 0 means completed)"
