package worker

import (
	"errors"
	"time"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/telemetry"
)

// Metered reports what a worker does to the process's Prometheus metrics
// (docs/observability.md): claims with their latency, and lease renewals
// and losses. Model requests, tool calls and run segments are counted by
// the session the worker drives runs through, so Event and Finished add
// nothing here.
func Metered(m *telemetry.Metrics) Telemetry { return metered{m} }

type metered struct{ m *telemetry.Metrics }

func (t metered) Claimed(_, _ string, _, waited time.Duration) { t.m.Claimed(waited) }

func (t metered) LeaseRenewed(_ string, err error) {
	switch {
	case err == nil:
		t.m.LeaseRenewed()
	case errors.Is(err, state.ErrLeaseLost):
		t.m.LeaseLost()
	}
}

func (metered) Event(engine.Event)                                          {}
func (metered) Finished(string, string, state.Status, time.Duration, error) {}
