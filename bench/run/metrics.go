package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Prometheus figures read around each case from processes that export
// them (idp-proxy's ops listener, oauth2-proxy's --metrics-address): the
// Go collector's count of garbage collections, and idp-proxy's count of
// cached verified tokens.
const (
	metricGCCount     = "go_gc_duration_seconds_count"
	metricCachedToken = "idp_proxy_verified_tokens_cached"
)

var metricsClient = &http.Client{Timeout: 5 * time.Second}

// scrape returns the values of the named unlabelled metrics at url.
func scrape(url string, names ...string) (map[string]float64, error) {
	resp, err := metricsClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok || !want[name] {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// gcCount returns the process's number of completed garbage collections.
func gcCount(url string) (int64, error) {
	m, err := scrape(url, metricGCCount)
	if err != nil {
		return 0, err
	}
	v, ok := m[metricGCCount]
	if !ok {
		return 0, fmt.Errorf("%s: no %s", url, metricGCCount)
	}
	return int64(v), nil
}
