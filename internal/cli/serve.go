package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexa-run/nexa/internal/serve"
	"github.com/nexa-run/nexa/internal/session"
	"github.com/nexa-run/nexa/internal/telemetry"
)

func init() { register(newServeCmd) }

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
records them; with --execute the server also continues a run once nothing is
pending in it. See docs/serve.md.

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
			if execute {
				// Runs are continued in this process; a signal asks each
				// to stop at its next safe point, and the server waits.
				senv := sessionEnv(e)
				senv.Metrics = metrics
				o.Execute = session.Resumer{Env: senv, Store: s, Stop: ctx.Done()}
			}
			metricsDone := make(chan error, 1)
			if metricsAddr != "" {
				bound := make(chan struct{})
				go func() {
					metricsDone <- telemetry.ServeMetrics(ctx, metricsAddr, metrics.Handler(), func(a string) {
						fmt.Fprintf(e.stderr, "nexa serve: metrics at http://%s/metrics\n", a)
						close(bound)
					})
				}()
				select {
				case <-bound:
				case err := <-metricsDone:
					return &exitError{code: ExitFailed, msg: err.Error()}
				}
			} else {
				metricsDone <- nil
			}
			if notify != "" {
				o.Notify = &serve.Notifier{URL: notify, Secret: e.getenv("NEXA_NOTIFY_SECRET"), Store: s, Interval: interval,
					Redact: redact, Log: func(f string, a ...any) { fmt.Fprintln(e.stderr, "nexa serve: "+redact(fmt.Sprintf(f, a...))) }}
			}
			srv, err := serve.New(o)
			if err != nil {
				return &exitError{code: ExitFailed, msg: err.Error()}
			}
			err = srv.Run(ctx, func(bound string) {
				if o.Notify != nil {
					o.Notify.BaseURL = "http://" + bound
				}
				fmt.Fprintf(e.stderr, "nexa serve: inbox at http://%s (store %s)\n", bound, o.StoreName)
			})
			stop() // the metrics listener stops with the server
			if merr := <-metricsDone; err == nil && merr != nil {
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
	fl.BoolVar(&execute, "execute", false, "continue a run once its last pending call is decided")
	fl.StringVar(&notify, "notify", "", "post run events to this `URL` (Standard Webhooks, signed with NEXA_NOTIFY_SECRET)")
	fl.DurationVar(&interval, "notify-interval", 2*time.Second, "how often the store is polled for events")
	fl.StringVar(&metricsAddr, "metrics-addr", "", "also serve GET /metrics on this `HOST:PORT`, without a token (see docs/observability.md)")
	return cmd
}
