package deploy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// exposition is a /metrics scrape: each family's type, and its samples.
type exposition struct {
	types   map[string]string // family name -> counter, gauge, histogram, summary, untyped
	samples []sample
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape reads the Prometheus text exposition at url. It is a small reader of what the
// Prometheus Go client writes (cachedb's own tests check the format with Prometheus' parser).
func scrape(url string) (exposition, error) {
	resp, err := http.Get(url)
	if err != nil {
		return exposition{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return exposition{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}

func parseExposition(r io.Reader) (exposition, error) {
	e := exposition{types: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			e.types[name] = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			return e, fmt.Errorf("not a sample: %q", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return e, fmt.Errorf("sample %q: %w", line, err)
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, lp := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[lp[1]] = lp[2]
		}
		e.samples = append(e.samples, s)
	}
	return e, sc.Err()
}

// sum adds the samples of name whose labels include want.
func (e exposition) sum(name string, want map[string]string) float64 {
	var total float64
	for _, s := range e.samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
			}
		}
		if match {
			total += s.value
		}
	}
	return total
}

// labelValues is the values label takes in the samples of name.
func (e exposition) labelValues(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range e.samples {
		if v, ok := s.labels[label]; ok && s.name == name {
			out[v] += s.value
		}
	}
	return out
}
