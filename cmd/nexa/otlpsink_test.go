package main

import (
	"encoding/json"
	"os"
	"sync"

	"github.com/nexa-run/nexa/internal/telemetry/telemetrytest"
	"github.com/rogpeppe/go-internal/testscript"
)

// cmdOTLPSink: otlpsink starts a fake OpenTelemetry collector taking
// OTLP/HTTP trace exports, sets $OTLP_URL to its base URL (what
// OTEL_EXPORTER_OTLP_ENDPOINT takes), and appends every span it receives
// to spans.jsonl as one JSON object (name, trace_id, span_id,
// parent_span_id, attributes) before it answers the export, so the file
// is complete once the exporting process has exited.
func cmdOTLPSink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: otlpsink")
	}
	path := ts.MkAbs("spans.jsonl")
	var mu sync.Mutex
	c := telemetrytest.Start(func(s telemetrytest.Span) {
		line, _ := json.Marshal(s)
		mu.Lock()
		defer mu.Unlock()
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			f.Write(append(line, '\n'))
			f.Close()
		}
	})
	ts.Defer(c.Close)
	ts.Setenv("OTLP_URL", c.URL)
}
