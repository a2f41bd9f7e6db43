package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// sourced is a gauge with one label whose values are read from a function at each scrape, so
// that it reports the state of a structure (the membership, the dataset registry) as it is,
// with no increments to keep in step. Without a source it reports nothing.
type sourced struct {
	desc *prometheus.Desc

	mu     sync.Mutex
	always []string
	source func() map[string]float64
}

func newSourced(name, help, label string) *sourced {
	return &sourced{desc: prometheus.NewDesc(name, help, []string{label}, nil)}
}

func (s *sourced) set(always []string, f func() map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always, s.source = always, f
}

func (s *sourced) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *sourced) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	always, source := s.always, s.source
	s.mu.Unlock()
	if source == nil {
		return
	}
	values := source()
	for _, k := range always {
		if _, ok := values[k]; !ok {
			values[k] = 0
		}
	}
	for k, v := range values {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, v, k)
	}
}
