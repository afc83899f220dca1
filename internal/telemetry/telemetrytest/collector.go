// Package telemetrytest is a fake OpenTelemetry collector for tests: an
// HTTP server that decodes OTLP/HTTP trace exports (protobuf) and keeps
// the spans it received, with the raw bodies, so a test can check span
// names and attributes and that no secret was sent.
package telemetrytest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, flattened: its name, ids in hex and its
// attributes rendered as strings.
type Span struct {
	Name                string            `json:"name"`
	TraceID             string            `json:"trace_id"`
	SpanID              string            `json:"span_id"`
	ParentSpanID        string            `json:"parent_span_id"`
	Attrs               map[string]string `json:"attributes"`
	StatusCode          int32             `json:"status_code"`
	ResourceServiceName string            `json:"service_name"`
}

// Collector is the fake collector; URL is what OTEL_EXPORTER_OTLP_ENDPOINT
// takes.
type Collector struct {
	URL string
	// OnSpan, when set before the first export, is told of each span as
	// it arrives, before the export is answered.
	OnSpan   func(Span)
	srv      *httptest.Server
	mu       sync.Mutex
	spans    []Span
	raw      [][]byte
	requests int
}

// NewCollector starts a collector that t closes.
func NewCollector(t testing.TB) *Collector {
	c := Start(nil)
	t.Cleanup(c.Close)
	return c
}

// Start starts a collector that the caller closes; onSpan, when set, is
// told of each span as it arrives, before the export is answered.
func Start(onSpan func(Span)) *Collector {
	c := &Collector{OnSpan: onSpan}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	c.URL = c.srv.URL
	return c
}

// Close stops the collector.
func (c *Collector) Close() { c.srv.Close() }

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil && r.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	var req coltrace.ExportTraceServiceRequest
	if err == nil && r.URL.Path == "/v1/traces" {
		err = proto.Unmarshal(body, &req)
	}
	c.mu.Lock()
	c.requests++
	c.raw = append(c.raw, body)
	if err == nil {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{Name: s.Name, TraceID: hexOf(s.TraceId), SpanID: hexOf(s.SpanId), ParentSpanID: hexOf(s.ParentSpanId),
						Attrs: map[string]string{}, StatusCode: int32(s.GetStatus().GetCode()), ResourceServiceName: service}
					for _, a := range s.Attributes {
						sp.Attrs[a.Key] = render(a.Value)
					}
					c.spans = append(c.spans, sp)
					if c.OnSpan != nil {
						c.OnSpan(sp)
					}
				}
			}
		}
	}
	c.mu.Unlock()
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans are the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Requests counts the export requests received.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Raw is every request body received, concatenated (uncompressed).
func (c *Collector) Raw() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.raw, nil)
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// render gives an attribute value as text (a list as its items joined by
// commas).
func render(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, render(e))
		}
		return strings.Join(parts, ",")
	}
	return v.String()
}
