package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

type harness struct {
	o      options
	bins   map[string]string
	logDir string
	rep    *report

	portsMu sync.Mutex
	ports   map[string]bool // addresses freeAddr has handed out
}

// benchCase is one configuration measured by wrk.
type benchCase struct {
	Name   string
	Proc   string // the process the case is about, for its peak RSS
	Load   load
	Reject bool // every answer must be non-2xx/3xx, and the upstream untouched
}

// sample is one measurement of one case.
type sample struct {
	Group string `json:"group"`
	Case  string `json:"case"`
	Round int    `json:"round"`
	Conns int    `json:"conns"`
	Proc  string `json:"process"`
	wrkResult
	Mem          map[string]memStats `json:"mem"`
	UpstreamHits *int64              `json:"upstream_hits,omitempty"`
	Problem      string              `json:"problem,omitempty"`
}

// runGroup measures cases interleaved: round after round, each case once
// per round in the same order (A B C A B C ...), so that drifts of a shared
// machine hit every configuration alike.
func (h *harness) runGroup(ctx context.Context, group string, cases []benchCase, procs []*proc, upstream string) {
	if h.o.only != "" && !strings.Contains(group, h.o.only) {
		return
	}
	if h.o.warmup > 0 {
		for _, c := range cases {
			if _, err := runWrk(ctx, c.Load, h.o.warmup); err != nil {
				h.rep.note("%s/%s warm-up: %v", group, c.Name, firstLine(err.Error()))
			}
		}
	}
	for r := range h.o.rounds {
		for _, c := range cases {
			if ctx.Err() != nil {
				return
			}
			for _, p := range procs {
				resetPeak(p.pid())
			}
			before := settledHits(upstream)
			res, err := runWrk(ctx, c.Load, h.o.duration)
			s := sample{Group: group, Case: c.Name, Round: r, Conns: c.Load.Conns, Proc: c.Proc, wrkResult: res, Mem: map[string]memStats{}}
			for _, p := range procs {
				if m, err := readMem(p.pid()); err == nil {
					s.Mem[p.name] = m
				}
			}
			if upstream != "" {
				if after, err := upstreamHits(upstream); err == nil {
					d := after - before
					s.UpstreamHits = &d
				}
			}
			switch {
			case err != nil:
				s.Problem = firstLine(err.Error())
			case s.Requests == 0:
				s.Problem = "no requests completed"
			case c.Reject && s.Non2xx3xx != s.Requests:
				s.Problem = fmt.Sprintf("%d of %d answers were 2xx/3xx for rejected requests", s.Requests-s.Non2xx3xx, s.Requests)
			case c.Reject && s.UpstreamHits != nil && *s.UpstreamHits != 0:
				s.Problem = fmt.Sprintf("the upstream served %d rejected requests", *s.UpstreamHits)
			case !c.Reject && s.Non2xx3xx > 0:
				s.Problem = fmt.Sprintf("%d of %d answers were not 2xx/3xx", s.Non2xx3xx, s.Requests)
			}
			if s.SocketErrors > 0 && s.Problem == "" {
				s.Problem = fmt.Sprintf("%d socket errors", s.SocketErrors)
			}
			logf("%-22s %-14s round %d: %9.0f req/s  p50 %6.3f ms  p99 %7.3f ms %s",
				group, c.Name, r, s.RPS, s.P50ms, s.P99ms, s.Problem)
			h.rep.Samples = append(h.rep.Samples, s)
		}
	}
}

// settledHits waits until the upstream's request count stops moving (the
// proxies may still be finishing requests of the previous case, whose
// clients are gone) and returns it.
func settledHits(base string) int64 {
	if base == "" {
		return 0
	}
	last, _ := upstreamHits(base)
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		n, err := upstreamHits(base)
		if err != nil || n == last {
			break
		}
		last = n
	}
	return last
}

func upstreamHits(base string) (int64, error) {
	if base == "" {
		return 0, errors.New("no upstream")
	}
	resp, err := http.Get(base + "/__bench/hits")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// start runs one of the built binaries.
func (h *harness) start(name, bin string, firstLine bool, args ...string) (*proc, error) {
	path := h.bins[bin]
	if path == "" {
		return nil, fmt.Errorf("%s was not built", bin)
	}
	return startProc(name, path, h.logDir, nil, firstLine, args...)
}

func is2xx(c int) bool { return c >= 200 && c < 300 }

// proxyPhase measures the upstream directly, the bare proxy and idp-proxy.
func (h *harness) proxyPhase(ctx context.Context) error {
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	upAddr, err := h.freeAddr()
	if err != nil {
		return err
	}
	up, err := h.start("upstream", "upstream", false, "-listen", upAddr)
	if err != nil {
		return err
	}
	procs = append(procs, up)
	upURL := "http://" + upAddr
	if err := waitHTTP(up, upURL+"/__bench/hits", nil, is2xx, 20*time.Second); err != nil {
		return err
	}
	bareAddr, err := h.freeAddr()
	if err != nil {
		return err
	}
	bare, err := h.start("bareproxy", "bareproxy", false, "-listen", bareAddr, "-upstream", upURL)
	if err != nil {
		return err
	}
	procs = append(procs, bare)
	bareURL := "http://" + bareAddr
	if err := waitHTTP(bare, bareURL+"/api/items", nil, is2xx, 20*time.Second); err != nil {
		return err
	}

	tokDir := filepath.Join(h.o.work, "tokens")
	idpURL, tok, err := h.startIDPProxy(ctx, upURL, tokDir, &procs)
	if err != nil {
		h.rep.note("idp-proxy cases skipped: %v", err)
		logf("idp-proxy cases skipped: %v", err)
	}
	if tok == nil {
		tok = &tokens{single: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJl"}
	}
	auth := "Authorization: Bearer " + tok.single
	for _, conns := range h.o.conns {
		cases := []benchCase{
			{Name: "direct", Proc: "upstream", Load: load{URL: upURL + "/api/items", Conns: conns, Headers: []string{auth}}},
			{Name: "bare-proxy", Proc: "bareproxy", Load: load{URL: bareURL + "/api/items", Conns: conns, Headers: []string{auth}}},
		}
		if idpURL != "" {
			rotate := filepath.Join(h.o.root, "bench", "lua", "rotate.lua")
			cases = append(cases,
				benchCase{Name: "idp-public", Proc: "idp-proxy", Load: load{URL: idpURL + "/public/items", Conns: conns}},
				benchCase{Name: "idp-valid", Proc: "idp-proxy", Load: load{URL: idpURL + "/api/items", Conns: conns, Headers: []string{auth}}},
				benchCase{Name: "idp-rotating", Proc: "idp-proxy", Load: load{URL: idpURL, Conns: conns, Script: rotate, Args: []string{tok.validReqs}}},
				benchCase{Name: "idp-invalid", Proc: "idp-proxy", Reject: true, Load: load{URL: idpURL, Conns: conns, Script: rotate, Args: []string{tok.invalidReqs}}},
			)
		}
		h.runGroup(ctx, fmt.Sprintf("proxy c%d", conns), cases, procs, upURL)
	}
	return nil
}

// tokens are the files the provider wrote, as request lists.
type tokens struct {
	single      string // one valid token
	validReqs   string // 1,000 distinct valid tokens on /api/items
	invalidReqs string // 1,000 invalid tokens on /api/items
}

// startIDPProxy starts the provider and idp-proxy in front of upURL and
// checks that it forwards a valid token and rejects an invalid one.
func (h *harness) startIDPProxy(ctx context.Context, upURL, tokDir string, procs *[]*proc) (string, *tokens, error) {
	if h.bins["idp-proxy"] == "" || h.bins["provider"] == "" {
		return "", nil, errors.New("idp-proxy or the provider was not built")
	}
	prov, err := h.start("provider", "provider", true, "-client", "bench", "-role", "bench-user", "-n", "1000", "-ttl", "1h", "-out", tokDir)
	if err != nil {
		return "", nil, err
	}
	*procs = append(*procs, prov)
	var info struct{ URL, Realm string }
	select {
	case line := <-prov.firstLine:
		if err := json.Unmarshal([]byte(line), &info); err != nil || info.URL == "" {
			return "", nil, fmt.Errorf("provider said %q:\n%s", line, prov.tail())
		}
	case <-time.After(60 * time.Second):
		return "", nil, fmt.Errorf("provider did not start:\n%s", prov.tail())
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	valid, err := readLines(filepath.Join(tokDir, "valid.txt"))
	if err != nil {
		return "", nil, err
	}
	invalid, err := readLines(filepath.Join(tokDir, "invalid.txt"))
	if err != nil {
		return "", nil, err
	}
	paths := make([]string, len(valid))
	for i := range paths {
		paths[i] = "/api/items"
	}
	tok := &tokens{single: valid[0]}
	if tok.validReqs, err = writeRequests(tokDir, "valid-requests.txt", paths, valid); err != nil {
		return "", nil, err
	}
	if tok.invalidReqs, err = writeRequests(tokDir, "invalid-requests.txt", paths, invalid); err != nil {
		return "", nil, err
	}

	addr, err := h.freeAddr()
	if err != nil {
		return "", nil, err
	}
	maddr, err := h.freeAddr()
	if err != nil {
		return "", nil, err
	}
	cfgPath := filepath.Join(h.o.work, "idp-proxy.yaml")
	cfg := fmt.Sprintf(`# written by bench/run
listen: %q
metrics_listen: %q
upstream:
  url: %q
  max_idle_conns_per_host: 1024
idp:
  server_url: %q
  realm: %q
  client_id: bench
  optional_audiences: [account]
routes:
  - match: /public/
    public: true
  - match: /api/
    roles: [bench-user]
default_policy: deny
log:
  format: json
  level: warn
`, addr, maddr, upURL, info.URL, info.Realm)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return "", nil, err
	}
	px, err := h.start("idp-proxy", "idp-proxy", false, "serve", "--config", cfgPath)
	if err != nil {
		return "", tok, err
	}
	*procs = append(*procs, px)
	base := "http://" + addr
	if err := waitHTTP(px, base+"/public/items", nil, is2xx, 30*time.Second); err != nil {
		return "", tok, err
	}
	bearer := func(t string) http.Header { return http.Header{"Authorization": {"Bearer " + t}} }
	if err := waitHTTP(px, base+"/api/items", bearer(valid[0]), is2xx, 30*time.Second); err != nil {
		return "", tok, fmt.Errorf("valid token not accepted: %w", err)
	}
	for _, bad := range invalid[:3] {
		if err := waitHTTP(px, base+"/api/items", bearer(bad), func(c int) bool { return c == 401 }, 5*time.Second); err != nil {
			return "", tok, fmt.Errorf("invalid token not rejected with 401: %w", err)
		}
	}
	return base, tok, nil
}

func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return out, nil
}

// shortenerPhases measures redirects against the constant 302 per store
// and size, and creates per store.
func (h *harness) shortenerPhases(ctx context.Context) error {
	addr302, err := h.freeAddr()
	if err != nil {
		return err
	}
	c302, err := h.start("const302", "const302", false, "-listen", addr302)
	if err != nil {
		return err
	}
	defer c302.stop()
	url302 := "http://" + addr302
	if err := waitHTTP(c302, url302+"/x", nil, func(c int) bool { return c == 302 }, 20*time.Second); err != nil {
		return err
	}
	stores := []string{"bolt"}
	if h.o.pgDSN != "" {
		stores = append(stores, "pg")
	} else {
		h.rep.note("PostgreSQL cases skipped: set BENCH_POSTGRES_DSN or TEST_POSTGRES_DSN")
	}
	rotate := filepath.Join(h.o.root, "bench", "lua", "rotate.lua")
	create := filepath.Join(h.o.root, "bench", "lua", "create.lua")
	for _, st := range stores {
		for _, n := range h.o.sizes {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			label := sizeLabel(n)
			storeArg, cleanup, err := h.preload(ctx, st, n)
			if err != nil {
				h.rep.note("%s %s: preload failed: %v", st, label, err)
				continue
			}
			name := "shortener-" + st + "-" + label
			sh, surl, err := h.startShortener(name, storeArg)
			if err != nil {
				cleanup()
				h.rep.note("%s: %v", name, err)
				continue
			}
			// The same store without the redirect cache, to show the
			// store's own cost (a bbolt file is locked by one process: the
			// second one gets a copy).
			ncName := "shortener-nocache-" + st + "-" + label
			ncArg := storeArg
			if st == "bolt" {
				ncArg, err = copyBolt(storeArg)
			}
			var nc *proc
			var ncURL string
			if err == nil {
				nc, ncURL, err = h.startShortener(ncName, ncArg, "--cache-size", "0")
			}
			if err != nil {
				h.rep.note("%s: %v", ncName, err)
			}
			codes := hotCodes(n, 1000)
			paths := make([]string, len(codes))
			for i, c := range codes {
				paths[i] = "/" + c
			}
			reqs, _ := writeRequests(h.o.work, "codes-"+st+"-"+label+".txt", paths, nil)
			cases := []benchCase{
				{Name: "const302", Proc: "const302", Load: load{URL: url302, Conns: 32, Script: rotate, Args: []string{reqs}}},
				{Name: "shortener", Proc: name, Load: load{URL: surl, Conns: 32, Script: rotate, Args: []string{reqs}}},
			}
			procs := []*proc{c302, sh}
			if nc != nil {
				cases = append(cases, benchCase{Name: "shortener-nocache", Proc: ncName, Load: load{URL: ncURL, Conns: 32, Script: rotate, Args: []string{reqs}}})
				procs = append(procs, nc)
			}
			h.runGroup(ctx, fmt.Sprintf("redirect %s %s", st, label), cases, procs, "")
			nc.stop()
			if n == h.o.sizes[0] {
				h.runGroup(ctx, "create "+st, []benchCase{
					{Name: "c1", Proc: name, Load: load{URL: surl + "/shorten", Conns: 1, Script: create}},
					{Name: "c32", Proc: name, Load: load{URL: surl + "/shorten", Conns: 32, Script: create}},
				}, []*proc{sh}, "")
			}
			sh.stop()
			cleanup()
		}
	}
	return nil
}

// startShortener runs cmd/shortener on a free port with its defaults except
// the access log (off: a log line per request would measure the log sink)
// and waits for its health check.
func (h *harness) startShortener(name, store string, extra ...string) (*proc, string, error) {
	addr, err := h.freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := append([]string{"--listen", addr, "--store", store, "--log-format", "json", "--access-log=false",
		"--base-url", "https://sho.rt", "--metrics-listen", "off"}, extra...)
	p, err := h.start(name, "shortener", false, args...)
	if err != nil {
		return nil, "", err
	}
	u := "http://" + addr
	if err := waitHTTP(p, u+"/health", nil, is2xx, 60*time.Second); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, u, nil
}

// copyBolt copies the bbolt file of a "bolt:PATH" store and returns the
// copy's store value; the copy is removed with the original's directory.
func copyBolt(storeArg string) (string, error) {
	src := strings.TrimPrefix(storeArg, "bolt:")
	dst := strings.TrimSuffix(src, ".db") + "-copy.db"
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync() // no writeback of the copy during the measurements
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return "bolt:" + dst, nil
}

func sizeLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// preload fills a store with n links and returns the shortener's --store
// value and a cleanup function.
func (h *harness) preload(ctx context.Context, st string, n int) (string, func(), error) {
	start := time.Now()
	defer func() { logf("preloaded %d links into %s in %v", n, st, time.Since(start).Round(time.Millisecond)) }()
	switch st {
	case "bolt":
		path := filepath.Join(h.o.work, "data", "links-"+sizeLabel(n)+".db")
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return "", nil, err
		}
		if err := preloadBolt(ctx, path, n); err != nil {
			return "", nil, err
		}
		if fi, err := os.Stat(path); err == nil {
			h.rep.note("bbolt file with %s links: %.1f MiB", sizeLabel(n), float64(fi.Size())/(1<<20))
		}
		return "bolt:" + path, func() {
			_ = os.Remove(path)
			_ = os.Remove(strings.TrimSuffix(path, ".db") + "-copy.db")
		}, nil
	default:
		schema := "idp_bench_" + strings.ToLower(sizeLabel(n))
		dsn, err := preloadPG(ctx, h.o.pgDSN, schema, n)
		if err != nil {
			return "", nil, err
		}
		return dsn, func() {
			if err := dropSchema(context.WithoutCancel(ctx), h.o.pgDSN, schema); err != nil {
				logf("drop schema %s: %v", schema, err)
			}
		}, nil
	}
}
