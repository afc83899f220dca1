#!/usr/bin/env bash
# Validate every example .nx/.nxlib file of a checkout of the public Nexa
# repository (the Python 2.3.x implementation) with this project's
# `nexa validate`, and print one line per file: OK or ERR with the first
# errors. Files that the 2.3 parser itself rejects are expected to fail too;
# docs/language.md lists the known results.
#
# usage: scripts/check-nexa-examples.sh /path/to/Nexa [path/to/nexa-binary]
set -euo pipefail

repo=${1:?usage: $0 /path/to/Nexa-checkout [nexa-binary]}
nexa=${2:-}
if [[ -z $nexa ]]; then
	nexa=$(mktemp -d)/nexa
	go build -o "$nexa" "$(dirname "$0")/../cmd/nexa"
fi

cd "$repo"
ok=0
bad=0
while IFS= read -r f; do
	if out=$(NEXA_PATH="$repo" "$nexa" validate "$f" 2>&1); then
		ok=$((ok + 1))
		echo "OK   $f"
	else
		bad=$((bad + 1))
		echo "ERR  $f"
		grep -E ': error: ' <<<"$out" | head -3 | sed 's/^/       /'
	fi
done < <(find examples stdlib AGENT_LEARN \( -name '*.nx' -o -name '*.nxlib' \) 2>/dev/null | sort)
echo "$ok passed, $bad failed"
