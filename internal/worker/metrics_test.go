package worker_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/telemetry"
	"github.com/nexa-run/nexa/internal/worker"
)

// TestMeteredCountsClaimsAndLeases: what a worker reports moves the
// metrics docs/observability.md names — a claim with the time the run
// waited, a renewed lease, a lease lost to another holder — while a
// renewal that merely failed this time is neither.
func TestMeteredCountsClaimsAndLeases(t *testing.T) {
	m := telemetry.NewMetrics(telemetry.MetricsOptions{})
	tel := worker.Metered(m)
	tel.Claimed("run_1", "A", time.Millisecond, 2*time.Second)
	tel.LeaseRenewed("run_1", nil)
	tel.LeaseRenewed("run_1", nil)
	tel.LeaseRenewed("run_1", fmt.Errorf("renew: %w", state.ErrLeaseLost))
	tel.LeaseRenewed("run_1", errors.New("store is locked"))

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v", err)
	}
	value := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("no single metric %s in %s", name, rec.Body)
		}
		if c := f.Metric[0].GetCounter(); c != nil {
			return c.GetValue()
		}
		return f.Metric[0].GetHistogram().GetSampleSum()
	}
	for name, want := range map[string]float64{
		"nexa_claims_total":          1,
		"nexa_claim_latency_seconds": 2,
		"nexa_lease_renewals_total":  2,
		"nexa_lease_losses_total":    1,
	} {
		if got := value(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
