package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"
)

// tokensPhase is the many-distinct-tokens benchmark: idp-proxy with more distinct valid
// tokens than its verified-token cache holds (each request a different
// token, cycling, so that nearly every request is a cache miss), against
// the bare proxy, the naive per-request checker (bench/naiveproxy) and
// oauth2-proxy, closed loop (wrk, groups "tokens cN") and open loop at
// fixed rates (openloop.go, groups "tokens open R/s").
func (h *harness) tokensPhase(ctx context.Context, upURL, bareURL string, ip *idpProxy, procs []*proc) {
	tk := ip.tok
	if len(tk.distinct) == 0 {
		return
	}
	if ip.cache > 0 {
		h.rep.note("tokens groups: %d distinct tokens, idp-proxy verified_cache_size %d (%.1f tokens per cache entry)",
			len(tk.distinct), ip.cache, float64(len(tk.distinct))/float64(ip.cache))
	} else {
		h.rep.note("tokens groups: %d distinct tokens, idp-proxy's default verified-token cache", len(tk.distinct))
	}
	var local []*proc
	defer func() {
		for _, p := range local {
			p.stop()
		}
	}()
	naiveURL, naive, err := h.startNaive(upURL, ip)
	if err != nil {
		h.rep.note("naiveproxy cases skipped: %v", err)
		logf("naiveproxy cases skipped: %v", err)
	} else {
		local = append(local, naive)
	}
	var o2pURL, o2pMetrics string
	if h.bins[o2pName] != "" {
		var o2p *proc
		o2p, o2pURL, o2pMetrics, err = h.startOAuth2Proxy(upURL, ip.issuer, "bench", tk.single, tk.invalid[:3])
		if err != nil {
			h.rep.note("%s cases skipped: %v", o2pName, firstLine(err.Error()))
			logf("%s cases skipped: %v", o2pName, err)
		} else {
			local = append(local, o2p)
		}
	}
	all := append(append([]*proc{}, procs...), local...)
	ring := &tokenRing{n: len(tk.distinct)}
	rotate := filepath.Join(h.o.root, "bench", "lua", "rotate.lua")
	auth := "Authorization: Bearer " + tk.single
	singleAuth, distinctAuth := bearerValues([]string{tk.single}), bearerValues(tk.distinct)

	for _, conns := range h.o.conns {
		static := func(base string) load {
			return load{URL: base + "/api/items", Conns: conns, Headers: []string{auth}}
		}
		distinct := func(base string) load {
			return load{URL: base, Conns: conns, Script: rotate, Args: []string{tk.distinctReqs}}
		}
		cases := []benchCase{
			{Name: "bare-proxy", Proc: "bareproxy", Load: static(bareURL)},
			{Name: "idp-repeated", Proc: "idp-proxy", Metrics: ip.metrics, Load: static(ip.url)},
			{Name: "idp-distinct", Proc: "idp-proxy", Metrics: ip.metrics, Load: distinct(ip.url), Ring: ring},
		}
		if naiveURL != "" {
			cases = append(cases, benchCase{Name: "naive-distinct", Proc: "naiveproxy", Load: distinct(naiveURL), Ring: ring})
		}
		if o2pURL != "" {
			cases = append(cases,
				benchCase{Name: "o2p-repeated", Proc: o2pName, Metrics: o2pMetrics, Load: static(o2pURL)},
				benchCase{Name: "o2p-distinct", Proc: o2pName, Metrics: o2pMetrics, Load: distinct(o2pURL), Ring: ring})
		}
		h.runGroup(ctx, fmt.Sprintf("tokens c%d", conns), cases, all, upURL)
	}

	for _, rate := range h.o.rates {
		open := func(base string, auth []string) *openLoad {
			return &openLoad{URL: base + "/api/items", Rate: rate, Auth: auth}
		}
		cases := []benchCase{
			{Name: "bare-proxy", Proc: "bareproxy", Open: open(bareURL, singleAuth)},
			{Name: "idp-repeated", Proc: "idp-proxy", Metrics: ip.metrics, Open: open(ip.url, singleAuth)},
			{Name: "idp-distinct", Proc: "idp-proxy", Metrics: ip.metrics, Open: open(ip.url, distinctAuth), Ring: ring},
		}
		if naiveURL != "" {
			cases = append(cases, benchCase{Name: "naive-distinct", Proc: "naiveproxy", Open: open(naiveURL, distinctAuth), Ring: ring})
		}
		if o2pURL != "" {
			cases = append(cases,
				benchCase{Name: "o2p-repeated", Proc: o2pName, Metrics: o2pMetrics, Open: open(o2pURL, singleAuth)},
				benchCase{Name: "o2p-distinct", Proc: o2pName, Metrics: o2pMetrics, Open: open(o2pURL, distinctAuth), Ring: ring})
		}
		h.runGroup(ctx, fmt.Sprintf("tokens open %d/s", rate), cases, all, upURL)
	}
}

// startNaive runs bench/naiveproxy in front of upURL for ip's provider and
// checks that it forwards a valid token and rejects invalid ones.
func (h *harness) startNaive(upURL string, ip *idpProxy) (string, *proc, error) {
	addr, err := h.freeAddr()
	if err != nil {
		return "", nil, err
	}
	p, err := h.start("naiveproxy", "naiveproxy", false, "-listen", addr, "-upstream", upURL,
		"-issuer", ip.issuer, "-audience", "bench")
	if err != nil {
		return "", nil, err
	}
	base := "http://" + addr
	bearer := func(t string) http.Header { return http.Header{"Authorization": {"Bearer " + t}} }
	if err := waitHTTP(p, base+"/api/items", bearer(ip.tok.single), is2xx, 30*time.Second); err != nil {
		p.stop()
		return "", nil, fmt.Errorf("valid token not accepted: %w", err)
	}
	for _, bad := range ip.tok.invalid[:3] {
		if err := waitHTTP(p, base+"/api/items", bearer(bad), func(c int) bool { return c == 401 }, 5*time.Second); err != nil {
			p.stop()
			return "", nil, fmt.Errorf("invalid token not rejected with 401: %w", err)
		}
	}
	return base, p, nil
}
