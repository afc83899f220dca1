#!/usr/bin/env bash
# Parallel tool calls, end to end, as docs/benchmarks.md ("Parallel tool
# calls") quotes them: a local model server answers every request after a
# fixed latency; its first reply asks for three shell calls of `sleep 1`
# (allowed by a policy rule, so no person is asked), its second gives the
# answer. Each run is one whole `nexa agent` process, once with the default
# bound (the calls run at once) and once with --max-parallel-tools 1 (one
# after another), alternated so that both see the same load.
#
# Usage: bench/parallel.sh [runs] [latency] [binary]
#   runs     runs per bound (default 5)
#   latency  seconds the model server waits before each reply (default 0.5)
#   binary   nexa binary (default: one built here with `make build`)
#
# Printed per bound: the median wall time of the process, the median span
# of the tools (the first call's started_at to the last call's
# completed_at, from the journal), and each run's span.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
latency=${2:-0.5}
bin=${3:-}
if [ -z "$bin" ]; then
	make -s build
	bin=$PWD/bin/nexa
fi
work=$(mktemp -d -t nexa-bench-parallel.XXXXXX)
server=
cleanup() {
	if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# The model server: OpenAI Chat Completions, non-streamed. Which reply it
# gives depends only on the request (its number of assistant messages), so
# runs may overlap and be repeated.
cat >"$work/model.py" <<'PY'
import json, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

latency = float(sys.argv[1])

class Model(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(latency)
        turn = sum(1 for m in req["messages"] if m["role"] == "assistant")
        msg = {"role": "assistant", "content": "Done."}
        finish = "stop"
        if turn == 0:
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"nap_{i}", "type": "function",
                 "function": {"name": "shell_exec", "arguments": json.dumps({"command": "sleep 1"})}}
                for i in (1, 2, 3)]}
            finish = "tool_calls"
        body = json.dumps({"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 0,
                           "model": req["model"], "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = ThreadingHTTPServer(("127.0.0.1", 0), Model)
with open(sys.argv[2], "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
PY
python3 "$work/model.py" "$latency" "$work/port.tmp" &
server=$!
for _ in $(seq 100); do
	if [ -s "$work/port.tmp" ]; then break; fi
	sleep 0.05
done
if [ ! -s "$work/port.tmp" ]; then
	echo "the model server did not start" >&2
	exit 1
fi
base="http://127.0.0.1:$(cat "$work/port.tmp")/v1"

cat >"$work/nap.nx" <<'NX'
agent Napper uses std.shell {
    prompt: "Take three naps."
}
NX
cat >"$work/policy.toml" <<'TOML'
[[rule]]
name = "naps"
tool = "shell_exec"
decision = "allow"
reason = "a nap is harmless"
[rule.args]
command = "sleep 1"
TOML

# span SHOW_JSON: seconds from the first call's start to the last call's end
span() {
	python3 - "$1" <<'PY'
import json, re, sys
from datetime import datetime
def t(s):
    # nanoseconds to microseconds, for fromisoformat
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", s.replace("Z", "+00:00")))
journal = json.load(open(sys.argv[1]))["journal"]
if len(journal) != 3 or any(e["stage"] != "completed" for e in journal):
    sys.exit("expected three completed calls, got %s" % [(e["call_id"], e["stage"]) for e in journal])
print("%.3f" % (max(t(e["completed_at"]) for e in journal) - min(t(e["started_at"]) for e in journal)).total_seconds())
PY
}

declare -A walls spans
for i in $(seq "$runs"); do
	for bound in 4 1; do
		dir="$work/run-$bound-$i"
		mkdir "$dir"
		cd "$dir"
		TIMEFORMAT=%3R
		wall=$({ time "$bin" agent "$work/nap.nx" Napper 'Nap three times' -q --provider openai \
			--model bench --base-url "$base" --no-stream --policy "$work/policy.toml" \
			--max-parallel-tools "$bound" >out.json 2>err; } 2>&1) || {
			echo "run failed: $(cat err)" >&2
			exit 1
		}
		run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' out.json)
		"$bin" runs show "$run" --json >show.json
		walls[$bound]+="$wall "
		spans[$bound]+="$(span show.json) "
		cd - >/dev/null
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "model latency ${latency}s, three calls of sleep 1, $runs runs each, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %10s %12s  %s\n' "bound" "wall (s)" "tools (s)" "each run's tools span"
for bound in 4 1; do
	label="--max-parallel-tools $bound"
	[ "$bound" = 4 ] && label="default (4)"
	printf '%-28s %10s %12s  %s\n' "$label" "$(echo "${walls[$bound]}" | median)" \
		"$(echo "${spans[$bound]}" | median)" "${spans[$bound]}"
done
