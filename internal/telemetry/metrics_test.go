package telemetry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads h as Prometheus does and parses the text format.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v", err)
	}
	return fams
}

// sample finds the metric of family name whose labels include labels.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no %s with labels %v", name, labels)
	return nil
}

// TestMetricsAnswerInTheTextFormat: each typed method moves the metric it
// names, and the handler serves them as Prometheus parses them.
func TestMetricsAnswerInTheTextFormat(t *testing.T) {
	m := NewMetrics(MetricsOptions{RunCounter: func(context.Context) (map[string]int, error) {
		return map[string]int{"completed": 3, "waiting_approval": 1}, nil
	}})
	m.Claimed(250 * time.Millisecond)
	m.Claimed(750 * time.Millisecond)
	m.LeaseRenewed()
	m.LeaseRenewed()
	m.LeaseRenewed()
	m.LeaseLost()
	m.ProviderRetried()
	m.Step(StepModel, 2*time.Second)
	m.ToolDone("record_review", OutcomeOK, 100*time.Millisecond)
	m.ToolDone("record_review", OutcomeUnknown, time.Second)
	m.SegmentEnded("completed")

	fams := scrape(t, m.Handler())
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"nexa_claims_total", nil, 2},
		{"nexa_lease_renewals_total", nil, 3},
		{"nexa_lease_losses_total", nil, 1},
		{"nexa_provider_retries_total", nil, 1},
		{"nexa_tool_calls_total", map[string]string{"tool": "record_review", "outcome": "ok"}, 1},
		{"nexa_tool_calls_total", map[string]string{"tool": "record_review", "outcome": "unknown"}, 1},
		{"nexa_run_segments_total", map[string]string{"status": "completed"}, 1},
	}
	for _, c := range counters {
		if got := sample(t, fams, c.name, c.labels).GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if h := sample(t, fams, "nexa_claim_latency_seconds", nil).GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 1 {
		t.Errorf("claim latency count %d sum %v, want 2 and 1s", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := sample(t, fams, "nexa_tool_duration_seconds", map[string]string{"tool": "record_review"}).GetHistogram(); h.GetSampleCount() != 2 {
		t.Errorf("tool duration count %d, want 2", h.GetSampleCount())
	}
	if h := sample(t, fams, "nexa_step_duration_seconds", map[string]string{"kind": "tool"}).GetHistogram(); h.GetSampleCount() != 2 {
		t.Errorf("tool steps %d, want 2", h.GetSampleCount())
	}
	if h := sample(t, fams, "nexa_step_duration_seconds", map[string]string{"kind": "model"}).GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 2 {
		t.Errorf("model steps %d (sum %v), want 1 (2s)", h.GetSampleCount(), h.GetSampleSum())
	}
	if got := sample(t, fams, "nexa_runs", map[string]string{"status": "completed"}).GetGauge().GetValue(); got != 3 {
		t.Errorf("nexa_runs{completed} = %v, want 3", got)
	}
	if got := sample(t, fams, "nexa_store_up", nil).GetGauge().GetValue(); got != 1 {
		t.Errorf("nexa_store_up = %v, want 1", got)
	}
	if fams["go_goroutines"] == nil {
		t.Error("the Go runtime's metrics are missing")
	}
}

// TestRunsGaugeWithoutTheStore: a store that does not answer reports
// nexa_store_up 0 and no run counts, rather than wrong ones, and the scrape
// still answers.
func TestRunsGaugeWithoutTheStore(t *testing.T) {
	m := NewMetrics(MetricsOptions{RunCounter: func(ctx context.Context) (map[string]int, error) {
		return nil, errors.New("database is down")
	}})
	fams := scrape(t, m.Handler())
	if got := sample(t, fams, "nexa_store_up", nil).GetGauge().GetValue(); got != 0 {
		t.Errorf("nexa_store_up = %v, want 0", got)
	}
	if fams["nexa_runs"] != nil {
		t.Error("nexa_runs reported without a store answer")
	}
}

// TestMetricsUseTheirOwnRegistry: nothing is registered with the client
// library's global registry (no side effect of building metrics), and two
// Metrics in one process do not collide.
func TestMetricsUseTheirOwnRegistry(t *testing.T) {
	a, b := NewMetrics(MetricsOptions{}), NewMetrics(MetricsOptions{})
	a.LeaseLost()
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "nexa_") {
			t.Errorf("%s is in the global registry", f.GetName())
		}
	}
	if got := sample(t, scrape(t, b.Handler()), "nexa_lease_losses_total", nil).GetCounter().GetValue(); got != 0 {
		t.Errorf("b counts a's lease loss: %v", got)
	}
}

// TestNilMetricsDoNothing: a caller given no metrics calls the methods
// without checks.
func TestNilMetricsDoNothing(t *testing.T) {
	var m *Metrics
	m.Claimed(time.Second)
	m.LeaseRenewed()
	m.LeaseLost()
	m.ProviderRetried()
	m.Step(StepModel, time.Second)
	m.ToolDone("x", OutcomeOK, time.Second)
	m.SegmentEnded("completed")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("nil metrics answered %d", rec.Code)
	}
}

// TestServeMetrics: the worker's --metrics-addr listener answers /metrics
// and nothing else, and stops with its context.
func TestServeMetrics(t *testing.T) {
	if err := CheckMetricsAddr("9090"); err == nil {
		t.Error("an address without a port was accepted")
	}
	m := NewMetrics(MetricsOptions{})
	m.LeaseRenewed()
	ctx, cancel := context.WithCancel(context.Background())
	bound := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- ServeMetrics(ctx, "127.0.0.1:0", m.Handler(), func(a string) { bound <- a }) }()
	addr := <-bound
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	fams, err := (func() (map[string]*dto.MetricFamily, error) {
		defer res.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		return p.TextToMetricFamilies(res.Body)
	})()
	if err != nil || fams["nexa_lease_renewals_total"].GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Fatalf("metrics over the listener: %v %v", err, fams["nexa_lease_renewals_total"])
	}
	res, err = http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("GET / answered %d, want 404", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeMetrics after cancel: %v", err)
	}
}
