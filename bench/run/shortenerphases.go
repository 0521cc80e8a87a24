package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The shortener's groups: its stores preloaded with 10k and 1M links, and
// its redirect and create cases against a constant 302.

// shortenerPhases measures redirects against the constant 302 per store
// and size, and creates per store.
func (h *harness) shortenerPhases(ctx context.Context) error {
	stores := []string{"bolt"}
	if h.o.pgDSN != "" {
		stores = append(stores, "pg")
	}
	var names []string
	for _, st := range stores {
		names = append(names, "create "+st)
		for _, n := range h.o.sizes {
			names = append(names, fmt.Sprintf("redirect %s %s", st, sizeLabel(n)))
		}
	}
	if !h.selectsAny(names) {
		return nil
	}
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
	if h.o.pgDSN == "" {
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
			if !h.selected(fmt.Sprintf("redirect %s %s", st, label)) && (n != h.o.sizes[0] || !h.selected("create "+st)) {
				continue
			}
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
			// store's own cost, and without visit statistics, to show
			// theirs (a bbolt file is locked by one process: the others
			// get copies).
			variant := func(bin, name, suffix string, args ...string) (*proc, string) {
				arg := storeArg
				var err error
				if st == "bolt" {
					arg, err = copyBolt(storeArg, suffix)
				}
				var p *proc
				var u string
				if err == nil {
					p, u, err = h.startShortenerBin(bin, name, arg, args...)
				}
				if err != nil {
					h.rep.note("%s: %v", name, err)
				}
				return p, u
			}
			ncName := "shortener-nocache-" + st + "-" + label
			nc, ncURL := variant("shortener", ncName, "nocache", "--cache-size", "0")
			nsName := "shortener-nostats-" + st + "-" + label
			ns, nsURL := variant("shortener", nsName, "nostats", "--visit-stats=false")
			// The build of -shortener-base, by default and without the
			// cache: the before of a before/after in one run.
			var bases []benchCase
			var baseProcs []*proc
			if h.bins["shortener-base"] != "" {
				for _, v := range []struct {
					cs, suffix string
					args       []string
				}{{"base-shortener", "base", nil}, {"base-shortener-nocache", "basenocache", []string{"--cache-size", "0"}}} {
					pname := v.cs + "-" + st + "-" + label
					if p, u := variant("shortener-base", pname, v.suffix, v.args...); p != nil {
						bases = append(bases, benchCase{Name: v.cs, Proc: pname, Load: load{URL: u, Conns: 32, Script: rotate}})
						baseProcs = append(baseProcs, p)
					}
				}
			}
			codes := hotCodes(n, 1000)
			paths := make([]string, len(codes))
			for i, c := range codes {
				paths[i] = "/" + c
			}
			reqs, _ := writeRequests(h.o.work, "codes-"+st+"-"+label+".txt", paths, nil)
			// Every request as a browser's: the statistics classify a real
			// User-Agent and keep the referrer's host (without one, wrk's
			// requests would all be bots with no dimensions).
			hdrs := []string{"User-Agent: " + browserUA, "Referer: https://news.example/item?id=42"}
			cases := []benchCase{
				{Name: "const302", Proc: "const302", Load: load{URL: url302, Conns: 32, Headers: hdrs, Script: rotate, Args: []string{reqs}}},
				{Name: "shortener", Proc: name, Load: load{URL: surl, Conns: 32, Headers: hdrs, Script: rotate, Args: []string{reqs}}},
			}
			procs := []*proc{c302, sh}
			if ns != nil {
				cases = append(cases, benchCase{Name: "shortener-nostats", Proc: nsName, Load: load{URL: nsURL, Conns: 32, Headers: hdrs, Script: rotate, Args: []string{reqs}}})
				procs = append(procs, ns)
			}
			if nc != nil {
				cases = append(cases, benchCase{Name: "shortener-nocache", Proc: ncName, Load: load{URL: ncURL, Conns: 32, Headers: hdrs, Script: rotate, Args: []string{reqs}}})
				procs = append(procs, nc)
			}
			for i := range bases {
				bases[i].Load.Headers, bases[i].Load.Args = hdrs, []string{reqs}
			}
			cases = append(cases, bases...)
			procs = append(procs, baseProcs...)
			h.runGroup(ctx, fmt.Sprintf("redirect %s %s", st, label), cases, procs, "")
			nc.stop()
			ns.stop()
			for _, p := range baseProcs {
				p.stop()
			}
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
// and waits for its health check. Metrics are on, as by default, on a
// free port of their own (the default one would be shared by the cases'
// processes).
func (h *harness) startShortener(name, store string, extra ...string) (*proc, string, error) {
	return h.startShortenerBin("shortener", name, store, extra...)
}

// startShortenerBin is startShortener for the binary bin of h.bins.
func (h *harness) startShortenerBin(bin, name, store string, extra ...string) (*proc, string, error) {
	addr, err := h.freeAddr()
	if err != nil {
		return nil, "", err
	}
	maddr, err := h.freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := append([]string{"--listen", addr, "--store", store, "--log-format", "json", "--access-log=false",
		"--base-url", "https://sho.rt", "--metrics-listen", maddr}, extra...)
	p, err := h.start(name, bin, false, args...)
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

// browserUA is the User-Agent of the redirect groups' requests.
const browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// copyBolt copies the bbolt file of a "bolt:PATH" store to PATH-suffix.db
// and returns the copy's store value; preload's cleanup removes it.
func copyBolt(storeArg, suffix string) (string, error) {
	src := strings.TrimPrefix(storeArg, "bolt:")
	dst := strings.TrimSuffix(src, ".db") + "-" + suffix + ".db"
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
			for _, suffix := range []string{"nocache", "nostats", "base", "basenocache"} {
				_ = os.Remove(strings.TrimSuffix(path, ".db") + "-" + suffix + ".db")
			}
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
