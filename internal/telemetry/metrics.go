package telemetry

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a tool execution, the outcome label of nexa_tool_calls_total
// and nexa_tool_duration_seconds.
const (
	// OutcomeOK: the tool ran and reported success.
	OutcomeOK = "ok"
	// OutcomeError: the tool ran and reported an error, which the model
	// is told.
	OutcomeError = "error"
	// OutcomeNotExecuted: the tool could not be started; nothing ran.
	OutcomeNotExecuted = "not_executed"
	// OutcomeUnknown: whether the tool's effect happened is unknown.
	OutcomeUnknown = "unknown"
)

// Kinds of a step, the kind label of nexa_step_duration_seconds.
const (
	// StepModel is one model request (its retries included).
	StepModel = "model"
	// StepTool is one tool execution.
	StepTool = "tool"
)

// RunCounter counts the runs of a store by status. Metrics calls it on
// every scrape (bounded by MetricsOptions.RunCountTimeout), so that
// nexa_runs says where every run of a shared store stands, whichever
// process drives it.
type RunCounter func(ctx context.Context) (map[string]int, error)

// MetricsOptions configure NewMetrics.
type MetricsOptions struct {
	// RunCounter, when set, gives the nexa_runs gauge; nil leaves it out
	// (a process without a store).
	RunCounter RunCounter
	// RunCountTimeout bounds one RunCounter call; 0 means 5s.
	RunCountTimeout time.Duration
}

// Metrics are the Prometheus metrics of one nexa process, on a registry of
// their own (never the client library's global one). The worker, the
// server and the assembly call its typed methods; Handler serves them.
type Metrics struct {
	reg             *prometheus.Registry
	claims          prometheus.Counter
	claimLatency    prometheus.Histogram
	leaseRenewals   prometheus.Counter
	leaseLosses     prometheus.Counter
	providerRetries prometheus.Counter
	steps           *prometheus.HistogramVec
	toolCalls       *prometheus.CounterVec
	toolLatency     *prometheus.HistogramVec
	segments        *prometheus.CounterVec
}

// latencyBuckets span a fast local tool (5ms) to a slow model reply or a
// long tool (10 minutes), in seconds.
var latencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// NewMetrics registers nexa's metrics, with the Go runtime's and the
// process's, on a new registry.
func NewMetrics(o MetricsOptions) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.claims = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nexa_claims_total",
		Help: "Runs this process claimed (took the lease of) to drive them.",
	})
	m.claimLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "nexa_claim_latency_seconds",
		Help:    "Time from a run becoming runnable to this process claiming it.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	})
	m.leaseRenewals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nexa_lease_renewals_total",
		Help: "Leases on runs this process renewed while driving them.",
	})
	m.leaseLosses = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nexa_lease_losses_total",
		Help: "Leases on runs this process lost while driving them (another holder took the run).",
	})
	m.providerRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "nexa_provider_retries_total",
		Help: "Model requests retried after a transient failure.",
	})
	m.steps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "nexa_step_duration_seconds",
		Help:    "Duration of a step of a run: a model request (retries included) or a tool execution.",
		Buckets: latencyBuckets,
	}, []string{"kind"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nexa_tool_calls_total",
		Help: "Tool executions by tool and outcome (ok, error, not_executed, unknown).",
	}, []string{"tool", "outcome"})
	m.toolLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "nexa_tool_duration_seconds",
		Help:    "Duration of a tool execution, by tool.",
		Buckets: latencyBuckets,
	}, []string{"tool"})
	m.segments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "nexa_run_segments_total",
		Help: "Drives of a run by this process, by the status the run stopped at.",
	}, []string{"status"})
	m.reg.MustRegister(m.claims, m.claimLatency, m.leaseRenewals, m.leaseLosses, m.providerRetries,
		m.steps, m.toolCalls, m.toolLatency, m.segments,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.RunCounter != nil {
		timeout := o.RunCountTimeout
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		m.reg.MustRegister(&runsCollector{count: o.RunCounter, timeout: timeout,
			runs: prometheus.NewDesc("nexa_runs", "Runs in the store by status, counted when scraped.", []string{"status"}, nil),
			up:   prometheus.NewDesc("nexa_store_up", "1 when the store answered the count of runs of this scrape, else 0.", nil, nil),
		})
	}
	return m
}

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Claimed counts a claim of a run; wait is the time from the run becoming
// runnable to the claim.
func (m *Metrics) Claimed(wait time.Duration) {
	if m == nil {
		return
	}
	m.claims.Inc()
	m.claimLatency.Observe(wait.Seconds())
}

// LeaseRenewed counts a renewal of a run's lease.
func (m *Metrics) LeaseRenewed() {
	if m != nil {
		m.leaseRenewals.Inc()
	}
}

// LeaseLost counts a lease found taken by another holder.
func (m *Metrics) LeaseLost() {
	if m != nil {
		m.leaseLosses.Inc()
	}
}

// ProviderRetried counts a retry of a model request.
func (m *Metrics) ProviderRetried() {
	if m != nil {
		m.providerRetries.Inc()
	}
}

// Step records a step of kind (StepModel, StepTool) that took d.
func (m *Metrics) Step(kind string, d time.Duration) {
	if m != nil {
		m.steps.WithLabelValues(kind).Observe(d.Seconds())
	}
}

// ToolDone records an execution of tool that ended with outcome (one of
// the Outcome constants) after d; it is also a StepTool step.
func (m *Metrics) ToolDone(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	m.toolLatency.WithLabelValues(tool).Observe(d.Seconds())
	m.steps.WithLabelValues(StepTool).Observe(d.Seconds())
}

// SegmentEnded counts a drive of a run that stopped with the run at
// status ("error" when the drive failed before the run had one).
func (m *Metrics) SegmentEnded(status string) {
	if m != nil {
		m.segments.WithLabelValues(status).Inc()
	}
}

// runsCollector asks the store for the count of runs by status on every
// scrape: the gauge is the store's truth, not this process's memory.
type runsCollector struct {
	count    RunCounter
	timeout  time.Duration
	runs, up *prometheus.Desc
}

// Describe sends the descriptors of nexa_runs and nexa_store_up.
func (c *runsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.runs
	ch <- c.up
}

// Collect counts the runs; when the store does not answer, nexa_store_up
// is 0 and nexa_runs is left out rather than reported wrong.
func (c *runsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	counts, err := c.count(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	statuses := make([]string, 0, len(counts))
	for s := range counts {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(counts[s]), s)
	}
}
