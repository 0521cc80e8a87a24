package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestOpenLoop sends at a fixed rate to a local server: every scheduled
// request is sent, each token of the list in the documented order, and
// the latencies are plausible.
func TestOpenLoop(t *testing.T) {
	rate, d := 400, 500*time.Millisecond
	if v, err := strconv.Atoi(os.Getenv("OPENLOOP_RATE")); err == nil { // manual checks of the generator
		rate, d = v, 3*time.Second
	}
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")]++
		mu.Unlock()
	}))
	defer srv.Close()
	toks := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	res, st, err := runOpenLoop(t.Context(), openLoad{URL: srv.URL, Rate: rate, Auth: bearerValues(toks)}, 3, d)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(rate) * int64(d) / int64(time.Second)
	t.Logf("%+v %+v", res, st)
	if st.Sent != want || st.Dropped != 0 || st.Errors != 0 || res.Requests != want || res.Non2xx3xx != 0 {
		t.Fatalf("sent %d dropped %d errors %d completed %d non-2xx %d, want %d sent and completed", st.Sent, st.Dropped, st.Errors, res.Requests, res.Non2xx3xx, want)
	}
	if res.P50ms <= 0 || res.P99ms < res.P50ms || st.P999ms < res.P99ms || st.MaxMs < st.P999ms {
		t.Fatalf("percentiles out of order: %+v %+v", res, st)
	}
	// 200 requests over 8 tokens: each 25 times.
	mu.Lock()
	defer mu.Unlock()
	for _, tok := range toks {
		if seen["Bearer "+tok] != int(want)/len(toks) {
			t.Fatalf("tokens seen: %v", seen)
		}
	}
}

func TestRingIndex(t *testing.T) {
	// Base 3 in 8: requests 0, 1, 2, 3, ... use 3, 7, 4, 0, 5, 1, ...
	var got []int
	for k := range 6 {
		got = append(got, ringIndex(3, k, 8))
	}
	if fmt.Sprint(got) != "[3 7 4 0 5 1]" {
		t.Fatalf("got %v", got)
	}
}

func TestQuantile(t *testing.T) {
	xs := make([]time.Duration, 1000)
	for i := range xs {
		xs[i] = time.Duration(i+1) * time.Millisecond
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Millisecond, 0.99: 990 * time.Millisecond, 0.999: 999 * time.Millisecond, 1: time.Second} {
		if got := quantile(xs, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing")
	}
}
