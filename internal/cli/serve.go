package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/engine"
	"github.com/nexa-run/nexa/internal/serve"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/state"
	"github.com/nexa-run/nexa/internal/telemetry"
	"github.com/nexa-run/nexa/internal/testknob"
	"github.com/nexa-run/nexa/internal/worker"
)

func newServeCmd(e *env) *cobra.Command {
	var addr, storeFlag, token, tokenName, user, notify, metricsAddr string
	var allowHosts []string
	var execute bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080] [--store PATH]",
		Short: "Serve an approval inbox: a web page and a JSON API over the run store",
		Long: `Serve the runs of the store as a web page and a JSON API: list runs by
status, read a waiting run's task, conversation and pending calls, and approve
or deny each call with a reason. Decisions are recorded as nexa runs approve
records them; with --execute a run decided here is handed to the workers, and
the server is a worker itself (as nexa worker, for the programs of the current
directory), so the run continues once nothing is pending in it. See
docs/serve.md and docs/worker.md.

The server listens on 127.0.0.1:8080 unless --addr says otherwise, and refuses
an address beyond the loopback interface without a token (--token or
NEXA_SERVE_TOKEN). It answers only requests whose Host header is its own
address, a loopback address or localhost (with its port), or a name given with
--allow-host (a proxy or domain in front of it); any other host gets 421, which
keeps a DNS-rebinding page out. --notify URL posts a Standard Webhooks event,
signed with NEXA_NOTIFY_SECRET, when a run starts waiting, completes, fails or
has unknown outcomes; redirects are not followed.

GET /metrics answers Prometheus metrics (runs by status, tool and model
steps, retries) under the same token as the API (Authorization: Bearer
TOKEN); --metrics-addr also serves them on a separate address without a
token, for a scraper that must not hold the approval token. See
docs/observability.md.

Exit codes: 0 stopped by a signal, 1 operational error (cannot listen, store
unreadable), 2 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if token == "" {
				token = e.getenv("NEXA_SERVE_TOKEN")
			}
			if err := serve.CheckBind(addr, token); err != nil {
				return usageErrorf("%v", err)
			}
			for _, h := range allowHosts {
				if err := serve.CheckAllowHost(h); err != nil {
					return usageErrorf("%v", err)
				}
			}
			if metricsAddr != "" {
				if err := telemetry.CheckMetricsAddr(metricsAddr); err != nil {
					return usageErrorf("%v", err)
				}
			}
			if notify != "" {
				if err := serve.CheckNotifyURL(notify); err != nil {
					return usageErrorf("%v", err)
				}
				if _, err := serve.WebhookKey(e.getenv("NEXA_NOTIFY_SECRET")); err != nil {
					return usageErrorf("%v", err)
				}
			}
			s, err := openStoreForCommand(e, storeFlag, false)
			if err != nil {
				return err
			}
			defer s.Close()
			redact, err := session.ServeRedactor(sessionEnv(e), storeFlag, token, e.getenv("NEXA_NOTIFY_SECRET"))
			if err != nil {
				return usageErrorf("%v", err)
			}
			name := storeName(e, storeFlag)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			metrics := telemetry.NewMetrics(telemetry.MetricsOptions{RunCounter: session.RunCounter(s)})
			o := serve.Options{
				Store: s, StoreName: redact(s.Path()), StoreFlag: name, Addr: addr, AllowHosts: allowHosts,
				Token: token, TokenName: tokenName, User: user,
				Redact: redact, Log: e.stderr, EditChecker: session.EditChecker(sessionEnv(e), s),
				Metrics: metrics.Handler(),
			}
			var wk *worker.Worker
			wake := make(chan struct{}, 1)
			if execute {
				// The server is also a worker (the same code as nexa
				// worker): a run decided here is handed to the workers,
				// this one included, which continues it if it has the
				// run's program in this directory.
				wd, err := os.Getwd()
				if err != nil {
					return &exitError{code: ExitFailed, msg: fmt.Sprintf("working directory: %v", err)}
				}
				progs, err := workerPrograms(e, wd, nil)
				if err != nil {
					return usageErrorf("--execute continues runs of the programs in this directory: %v", err)
				}
				senv := sessionEnv(e)
				senv.Metrics = metrics
				logger, err := telemetry.NewLogger(e.stderr, telemetry.LogJSON, nil, redact)
				if err != nil {
					return &exitError{code: ExitFailed, msg: err.Error()}
				}
				wk, err = worker.New(worker.Options{Store: s, Env: senv, Dir: wd, Programs: progs,
					LeaseTTL: testknob.LeaseTTL(), Now: testClock(), Wake: wake, Telemetry: worker.Metered(metrics),
					Log: logger})
				if err != nil {
					return &exitError{code: ExitFailed, msg: err.Error()}
				}
				o.Execute = handOver{store: s, wake: wake}
			}
			stopMetrics := func() error { return nil }
			if metricsAddr != "" {
				stopMetrics, err = startMetrics(ctx, metricsAddr, metrics.Handler(), func(a string) {
					fmt.Fprintf(e.stderr, "nexa serve: metrics at http://%s/metrics\n", a)
				})
				if err != nil {
					return &exitError{code: ExitFailed, msg: err.Error()}
				}
			}
			if notify != "" {
				o.Notify = &serve.Notifier{URL: notify, Secret: e.getenv("NEXA_NOTIFY_SECRET"), Store: s, Interval: interval,
					Redact: redact, Log: func(f string, a ...any) { fmt.Fprintln(e.stderr, "nexa serve: "+redact(fmt.Sprintf(f, a...))) }}
			}
			srv, err := serve.New(o)
			if err != nil {
				return &exitError{code: ExitFailed, msg: err.Error()}
			}
			if wk != nil {
				// A signal drains the worker as it stops the server;
				// the store is closed once both are done.
				done := make(chan struct{})
				defer func() { <-done }()
				go func() {
					defer close(done)
					_ = wk.Run(context.Background(), ctx.Done())
				}()
			}
			err = srv.Run(ctx, func(bound string) {
				if o.Notify != nil {
					o.Notify.BaseURL = "http://" + bound
				}
				fmt.Fprintf(e.stderr, "nexa serve: inbox at http://%s (store %s)\n", bound, o.StoreName)
			})
			stop() // the metrics listener stops with the server
			if merr := stopMetrics(); err == nil && merr != nil {
				err = merr
			}
			if err != nil {
				return &exitError{code: ExitFailed, msg: err.Error()}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", serve.DefaultAddr, "listen `HOST:PORT`; beyond loopback only with a token")
	fl.StringVar(&storeFlag, "store", "", "run store `PATH` (default .nexa/runs.sqlite3, or NEXA_STORE)")
	fl.StringArrayVar(&allowHosts, "allow-host", nil, "also answer requests for this host `NAME` (or NAME:PORT), e.g. a proxy's domain; repeatable")
	fl.StringVar(&token, "token", "", "require this token of every request (or NEXA_SERVE_TOKEN)")
	fl.StringVar(&tokenName, "token-name", "token", "who decisions made with the token are recorded as")
	fl.StringVar(&user, "user", "", "who decisions are recorded as (wins over --token-name)")
	fl.BoolVar(&execute, "execute", false, "also be a worker: hand a run decided here to the workers and continue runs of this directory's programs")
	fl.StringVar(&notify, "notify", "", "post run events to this `URL` (Standard Webhooks, signed with NEXA_NOTIFY_SECRET)")
	fl.DurationVar(&interval, "notify-interval", 2*time.Second, "how often the store is polled for events")
	fl.StringVar(&metricsAddr, "metrics-addr", "", "also serve GET /metrics on this `HOST:PORT`, without a token (see docs/observability.md)")
	return cmd
}

// handOver is serve --execute's Execute: a run with nothing left for a
// person is handed to the workers (engine.HandOver) and the server's own
// worker is woken to look for it at once.
type handOver struct {
	store state.Store
	wake  chan struct{}
}

// Resume hands run to the workers unless it is a worker run already.
func (h handOver) Resume(ctx context.Context, run *state.RunState) error {
	if run.Config.Driver != state.DriverWorker {
		if _, err := engine.HandOver(ctx, h.store, run.ID, nil, engine.DecideOptions{}); err != nil {
			return err
		}
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return nil
}
