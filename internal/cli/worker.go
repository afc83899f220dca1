package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/compile"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/telemetry"
	"github.com/nexa-run/nexa/internal/testknob"
	"github.com/nexa-run/nexa/internal/worker"
)

func newWorkerCmd(e *env) *cobra.Command {
	var (
		storeFlag    string
		concurrency  int
		agentLimits  []string
		pollInterval time.Duration
		drainTimeout time.Duration
		metricsAddr  string
		logFormat    string
	)
	cmd := &cobra.Command{
		Use:   "worker [FILE…] [--store URL] [--concurrency N]",
		Short: "Continue runs handed to workers: detached runs, decided approvals, rescued runs",
		Long: `Claim and drive the runs handed to workers (nexa agent … --detach, or
nexa agent --resume RUN --detach) whose program this worker has: the programs
compiled from FILE…, or from every *.nx file of the current directory. A run
of any other program, by source hash, is never taken. A run is taken when it
is queued, when every pending call of it was decided, when its unknown
outcomes were resolved, when a drained worker left it interrupted, or when
the worker that drove it died (its lease expired). Tools run in this
directory. See docs/worker.md.

The first SIGTERM or SIGINT drains: nothing more is claimed, each run's
current step finishes (up to --drain-timeout), then the runs are saved
interrupted and released, for another worker. A second signal stops at once
and leaves the leases to expire.

Exit codes: 0 drained, 1 operational error (store unreachable), 2 usage
error, 130 stopped at once (second signal, or the drain timeout passed) with
runs still held.`,
		Example: `  nexa worker --store postgres://nexa@db/nexa
  nexa worker review.nx triage.nx --concurrency 8 --agent-limit Reviewer=2`,
		RunE: func(c *cobra.Command, files []string) error {
			if concurrency < 1 {
				return usageErrorf("--concurrency must be at least 1, not %d", concurrency)
			}
			if pollInterval <= 0 {
				return usageErrorf("--poll-interval must be positive, not %s", pollInterval)
			}
			if drainTimeout <= 0 {
				return usageErrorf("--drain-timeout must be positive, not %s", drainTimeout)
			}
			if metricsAddr != "" {
				if err := telemetry.CheckMetricsAddr(metricsAddr); err != nil {
					return usageErrorf("%v", err)
				}
			}
			if err := telemetry.CheckLogFormat(logFormat); err != nil {
				return usageErrorf("%v", err)
			}
			limits, err := parseAgentLimits(agentLimits)
			if err != nil {
				return usageErrorf("%v", err)
			}
			wd, err := os.Getwd()
			if err != nil {
				return &exitError{code: ExitFailed, msg: fmt.Sprintf("working directory: %v", err)}
			}
			progs, err := workerPrograms(e, wd, files)
			if err != nil {
				return err
			}
			s, err := openStoreForCommand(e, storeFlag, false)
			if err != nil {
				return err
			}
			defer s.Close()
			redact, err := session.ServeRedactor(sessionEnv(e), storeFlag, "", "")
			if err != nil {
				return usageErrorf("%v", err)
			}
			logger, err := telemetry.NewLogger(e.stderr, logFormat, nil, redact)
			if err != nil {
				return usageErrorf("%v", err)
			}
			return runWorker(e, s, wd, progs, metricsAddr, worker.Options{Concurrency: concurrency, AgentLimits: limits,
				PollInterval: pollInterval, DrainTimeout: drainTimeout, Log: logger})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&storeFlag, "store", "", "run store: a SQLite file `PATH` or a postgres:// URL (default .nexa/runs.sqlite3, or NEXA_STORE)")
	fl.IntVar(&concurrency, "concurrency", worker.DefaultConcurrency, "how many runs this worker drives at once")
	fl.StringArrayVar(&agentLimits, "agent-limit", nil, "at most `AGENT=N` runs of AGENT at once in this worker (repeatable)")
	fl.DurationVar(&pollInterval, "poll-interval", worker.DefaultPollInterval, "how often to look for runnable runs when nothing wakes the worker")
	fl.DurationVar(&drainTimeout, "drain-timeout", worker.DefaultDrainTimeout, "how long a drain waits for the current steps")
	fl.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics at GET /metrics on this `HOST:PORT` (see docs/observability.md)")
	fl.StringVar(&logFormat, "log-format", telemetry.LogJSON, "the log lines on stderr: json (one object per line) or text")
	return cmd
}

// runWorker runs a worker over s until a signal drains it (the first) or
// stops it (the second), and maps how it ended to the exit code. With a
// metrics address it also serves the worker's metrics there until it ends.
func runWorker(e *env, s session.Store, wd string, progs []worker.Program, metricsAddr string, o worker.Options) error {
	metrics := telemetry.NewMetrics(telemetry.MetricsOptions{RunCounter: session.RunCounter(s)})
	o.Store, o.Env, o.Dir, o.Programs = s, sessionEnv(e), wd, progs
	o.Env.Metrics, o.Telemetry = metrics, worker.Metered(metrics)
	o.LeaseTTL, o.Now = testknob.LeaseTTL(), testClock()
	w, err := worker.New(o)
	if err != nil {
		return &exitError{code: ExitUsage, msg: err.Error()}
	}
	ctx, stopNow := context.WithCancel(context.Background())
	defer stopNow()
	if metricsAddr != "" {
		stopMetrics, err := startMetrics(context.Background(), metricsAddr, metrics.Handler(), func(a string) {
			o.Log.Info("metrics", "url", "http://"+a+"/metrics")
		})
		if err != nil {
			return &exitError{code: ExitFailed, msg: err.Error()}
		}
		defer func() { _ = stopMetrics() }()
	}
	drain := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		close(drain)
		if _, ok := <-sigs; ok {
			stopNow()
		}
	}()
	err = w.Run(ctx, drain)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, worker.ErrDrainTimeout):
		return &exitError{code: ExitInterrupted, msg: "the drain timeout passed: the calls still running were cut off and their runs released; another worker takes them over, reporting a cut-off call as an unknown outcome"}
	case errors.Is(err, context.Canceled):
		return &exitError{code: ExitInterrupted, msg: "worker stopped with runs still held; their leases expire and another worker takes them over"}
	}
	return &exitError{code: ExitFailed, msg: err.Error()}
}

// startMetrics serves h at GET /metrics on addr in the background
// (telemetry.ServeMetrics) once the address is bound, which announce is
// told; an address that cannot be bound is the error. The listener stops
// when ctx ends or stop is called; stop waits for it and returns how
// serving ended.
func startMetrics(ctx context.Context, addr string, h http.Handler, announce func(bound string)) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	bound := make(chan struct{})
	go func() {
		served <- telemetry.ServeMetrics(ctx, addr, h, func(a string) {
			announce(a)
			close(bound)
		})
	}()
	select {
	case <-bound:
		return func() error { cancel(); return <-served }, nil
	case err := <-served:
		cancel()
		return nil, err
	}
}

// workerPrograms compiles the programs a worker offers: FILE… (each must
// compile), or every *.nx file of wd (those that do not compile are
// skipped with a warning: they may be includes).
func workerPrograms(e *env, wd string, files []string) ([]worker.Program, error) {
	explicit := len(files) > 0
	if !explicit {
		all, err := filepath.Glob(filepath.Join(wd, "*.nx"))
		if err != nil {
			return nil, &exitError{code: ExitFailed, msg: err.Error()}
		}
		for _, f := range all {
			files = append(files, filepath.Base(f))
		}
		slices.Sort(files)
	}
	var out []worker.Program
	for _, f := range files {
		prog, diags := compile.Compile(f, compile.Options{NexaPath: e.getenv("NEXA_PATH")})
		if prog == nil || diags.HasErrors() {
			if explicit {
				return nil, usageErrorf("%s does not compile (run nexa validate %s)", f, f)
			}
			fmt.Fprintf(e.stderr, "nexa worker: skipping %s: it does not compile on its own\n", f)
			continue
		}
		out = append(out, worker.Program{File: f, Program: prog})
	}
	if len(out) == 0 {
		return nil, usageErrorf("no program to offer: give FILE… or start the worker in a directory holding .nx files")
	}
	return out, nil
}

// parseAgentLimits reads --agent-limit AGENT=N values.
func parseAgentLimits(vals []string) (map[string]int, error) {
	out := map[string]int{}
	for _, v := range vals {
		agent, n, ok := strings.Cut(v, "=")
		k, err := strconv.Atoi(n)
		if !ok || agent == "" || err != nil || k < 1 {
			return nil, fmt.Errorf("--agent-limit takes AGENT=N with N at least 1, not %q", v)
		}
		out[agent] = k
	}
	return out, nil
}
