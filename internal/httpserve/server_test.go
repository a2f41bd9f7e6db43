package httpserve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestServerEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	hits := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_hits_total", Help: "Hits."})
	reg.MustRegister(hits)
	hits.Add(3)
	ready := NewReadiness()
	ready.Require("registered with the head")
	srv, err := Start(Options{Addr: "127.0.0.1:0", Ready: ready, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr()

	if code, body := get(t, base+"/live"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/live = %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, base+"/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "registered with the head") {
		t.Errorf("/ready before the condition = %d %q, want 503 naming the condition", code, body)
	}
	ready.Set("registered with the head", true)
	if code, body := get(t, base+"/ready"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/ready = %d %q, want 200 ready", code, body)
	}
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not the text exposition format: %v\n%s", err, body)
	}
	if f := families["test_hits_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 3 {
		t.Errorf("/metrics lacks test_hits_total 3:\n%s", body)
	}
	if code, _ := get(t, base+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without Pprof = %d, want 404", code)
	}
	ready.Stop()
	if code, body := get(t, base+"/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("/ready after Stop = %d %q, want 503 shutting down", code, body)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/live"); err == nil {
		t.Error("the server still answers after Close")
	}
}

func TestServerPprof(t *testing.T) {
	srv, err := Start(Options{Addr: "127.0.0.1:0", Pprof: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	if code, body := get(t, "http://"+srv.Addr()+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with Pprof = %d, want 200 listing the profiles", code)
	}
	if code, _ := get(t, "http://"+srv.Addr()+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics without a Gatherer = %d, want 404", code)
	}
}
