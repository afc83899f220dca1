package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// CheckMetricsAddr refuses a --metrics-addr that is not HOST:PORT.
func CheckMetricsAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--metrics-addr %q is not host:port: %w", addr, err)
	}
	return nil
}

// ServeMetrics serves h at GET /metrics on addr until ctx ends (a worker's
// --metrics-addr); every other path is 404. ready, when set, receives the
// address actually bound (useful with port 0). The endpoint has no
// authentication: bind it to loopback or to a network only the scraper
// reaches (docs/observability.md).
func ServeMetrics(ctx context.Context, addr string, h http.Handler, ready func(addr string)) error {
	if err := CheckMetricsAddr(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("metrics: %w", err)
	}
}
