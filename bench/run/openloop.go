package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// The open-loop load generator: requests are sent at a fixed rate, each at
// its scheduled time whatever happened to the previous ones, and each
// latency is measured from the SCHEDULED send time, so a server that stalls
// is charged for every request that should have been sent during the stall
// (no coordinated omission, unlike a closed loop such as wrk).
//
// One dispatcher goroutine, locked to its thread, sleeps until each
// scheduled time with clock_nanosleep (Go's timers fire up to 1 ms late on
// an idle process: the runtime's netpoller waits in whole milliseconds) and
// queues the request; a pool of workers, each with a keep-alive connection
// when needed, sends them. The queue holds every request of the run, so the
// dispatcher never blocks; a request a worker picks up 1 ms or more after
// its scheduled time is counted late (its latency still counts from the
// schedule), one not picked up by the end of the run plus a grace period
// is counted dropped.

// openLoad is one open-loop run's target.
type openLoad struct {
	URL  string // full URL, path included
	Rate int    // requests per second
	// Auth are Authorization header values ("Bearer T", see bearerValues)
	// sent in turn; one: repeated; none: no header.
	Auth    []string
	Workers int // concurrent requests at most [max(64, Rate/10)]
}

// bearerValues returns "Bearer T" for each token, once for all runs.
func bearerValues(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = "Bearer " + t
	}
	return out
}

// openStats are the open-loop figures of a run beyond wrkResult's.
type openStats struct {
	Rate    int     `json:"rate"`
	Sent    int64   `json:"sent"`
	P999ms  float64 `json:"p999_ms"`
	MaxMs   float64 `json:"max_ms"`
	Late    int64   `json:"late"`    // picked up ≥ lateAfter after the scheduled time
	Dropped int64   `json:"dropped"` // scheduled but never sent
	Errors  int64   `json:"errors"`  // transport errors (no response)
	Workers int     `json:"workers"`
}

const (
	lateAfter  = time.Millisecond
	dropGrace  = 2 * time.Second
	reqTimeout = 5 * time.Second
)

func (l openLoad) workers() int {
	if l.Workers > 0 {
		return l.Workers
	}
	return max(64, l.Rate/10)
}

func (l openLoad) command(d time.Duration) string {
	tok := "no token"
	switch {
	case len(l.Auth) == 1:
		tok = "one token on every request"
	case len(l.Auth) > 1:
		tok = fmt.Sprintf("%d distinct tokens in turn", len(l.Auth))
	}
	return fmt.Sprintf("openloop -rate %d/s -d %s -workers %d GET %s (%s)", l.Rate, d, l.workers(), l.URL, tok)
}

// openJob is one scheduled request: its sequence number and time.
type openJob struct {
	i     int
	sched time.Time
}

// workerStats are what one worker saw.
type workerStats struct {
	lat                      []time.Duration
	sent, late, errs, non2xx int64
}

// runOpenLoop sends l.Rate requests per second for d. Request k of the run
// (k = 0, 1, ...) carries l.Auth[(base + k/2 + (k%2)*len/2) % len]: two
// fronts half the list apart, as the two wrk threads of rotate.lua.
//
// The harness's own garbage collector is held back during the run (a
// collection first, then GOGC=1000: a run allocates far less than ten
// times the live heap), so that it does not delay the requests.
func runOpenLoop(ctx context.Context, l openLoad, base int, d time.Duration) (wrkResult, openStats, error) {
	res := wrkResult{Command: l.command(d)}
	st := openStats{Rate: l.Rate, Workers: l.workers()}
	if l.Rate <= 0 || d <= 0 {
		return res, st, fmt.Errorf("openloop: rate and duration must be positive")
	}
	hdrs := l.Auth
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: reqTimeout}).DialContext,
		MaxIdleConns:        st.Workers,
		MaxIdleConnsPerHost: st.Workers,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: reqTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(1000))
	total := int(int64(d) * int64(l.Rate) / int64(time.Second))
	jobs := make(chan openJob, total)
	start := time.Now().Add(10 * time.Millisecond)
	deadline := start.Add(d + dropGrace)
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(reqTimeout))
	defer cancel()

	stats := make([]workerStats, st.Workers)
	var wg sync.WaitGroup
	for w := range stats {
		ws := &stats[w]
		ws.lat = make([]time.Duration, 0, total/st.Workers+16)
		wg.Go(func() {
			for j := range jobs {
				picked := time.Now()
				if picked.After(deadline) || ctx.Err() != nil {
					continue // dropped
				}
				if picked.Sub(j.sched) >= lateAfter {
					ws.late++
				}
				ws.sent++
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL, nil)
				if err != nil {
					ws.errs++
					continue
				}
				if n := len(hdrs); n > 0 {
					req.Header["Authorization"] = []string{hdrs[ringIndex(base, j.i, n)]}
				}
				resp, err := client.Do(req)
				if err != nil {
					ws.errs++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ws.lat = append(ws.lat, time.Since(j.sched))
				if resp.StatusCode < 200 || resp.StatusCode > 299 {
					ws.non2xx++
				}
			}
		})
	}

	// The dispatcher: its own thread, precise sleeps.
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(jobs)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := range total {
			sched := start.Add(time.Duration(int64(i) * int64(time.Second) / int64(l.Rate)))
			if ctx.Err() != nil {
				return
			}
			sleepUntil(sched)
			jobs <- openJob{i: i, sched: sched}
		}
	}()
	<-done
	wg.Wait()
	elapsed := time.Since(start)

	var lat []time.Duration
	for _, ws := range stats {
		lat = append(lat, ws.lat...)
		st.Sent += ws.sent
		st.Late += ws.late
		st.Errors += ws.errs
		res.Non2xx3xx += ws.non2xx
	}
	st.Dropped = int64(total) - st.Sent
	slices.Sort(lat)
	res.Requests = int64(len(lat))
	res.SocketErrors = st.Errors
	if elapsed > 0 {
		res.RPS = float64(res.Requests) / min(elapsed, d).Seconds()
	}
	ms := func(q float64) float64 { return quantile(lat, q).Seconds() * 1000 }
	res.P50ms, res.P75ms, res.P90ms, res.P99ms = ms(0.50), ms(0.75), ms(0.90), ms(0.99)
	st.P999ms = ms(0.999)
	if len(lat) > 0 {
		st.MaxMs = lat[len(lat)-1].Seconds() * 1000
	}
	if ctx.Err() != nil && res.Requests == 0 {
		return res, st, ctx.Err()
	}
	return res, st, nil
}

// ringIndex is the index in a list of n of request k of a run from base:
// even requests go forward from base, odd ones from base + n/2.
func ringIndex(base, k, n int) int { return (base + k/2 + (k%2)*(n/2)) % n }

// quantile returns the q-quantile (nearest rank) of sorted xs.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	k := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(k, 0), len(xs)-1)]
}
