package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// proxyGroups are the names of the proxy phase's groups, for -only.
func (h *harness) proxyGroups() (proxy, tokens []string) {
	for _, c := range h.o.conns {
		proxy = append(proxy, fmt.Sprintf("proxy c%d", c))
		tokens = append(tokens, fmt.Sprintf("tokens c%d", c))
	}
	for _, r := range h.o.rates {
		tokens = append(tokens, fmt.Sprintf("tokens open %d/s", r))
	}
	return proxy, tokens
}

// proxyPhase measures the upstream directly, the bare proxy and idp-proxy
// (groups "proxy cN"), then nginx with and without idp-proxy's forward-auth
// against idp-proxy (groups "ingress cN", ingress.go), then idp-proxy with
// many distinct tokens against the naive checker and oauth2-proxy (groups
// "tokens ...", tokens.go).
func (h *harness) proxyPhase(ctx context.Context) error {
	proxyNames, tokenNames := h.proxyGroups()
	ingressNames := h.ingressGroups()
	if !h.selectsAny(proxyNames) && !h.selectsAny(tokenNames) && !h.selectsAny(ingressNames) {
		return nil
	}
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

	distinct := 0
	if h.selectsAny(tokenNames) {
		distinct = h.o.distinct
	}
	ip, err := h.startIDPProxy(ctx, upURL, filepath.Join(h.o.work, "tokens"), distinct, &procs)
	if err != nil {
		h.rep.note("idp-proxy cases skipped: %v", err)
		logf("idp-proxy cases skipped: %v", err)
	}
	tok := &tokens{single: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJl"}
	if ip != nil {
		tok = ip.tok
	}
	auth := "Authorization: Bearer " + tok.single
	for _, conns := range h.o.conns {
		cases := []benchCase{
			{Name: "direct", Proc: "upstream", Load: load{URL: upURL + "/api/items", Conns: conns, Headers: []string{auth}}},
			{Name: "bare-proxy", Proc: "bareproxy", Load: load{URL: bareURL + "/api/items", Conns: conns, Headers: []string{auth}}},
		}
		if ip != nil {
			rotate := filepath.Join(h.o.root, "bench", "lua", "rotate.lua")
			cases = append(cases,
				benchCase{Name: "idp-public", Proc: "idp-proxy", Metrics: ip.metrics, Load: load{URL: ip.url + "/public/items", Conns: conns}},
				benchCase{Name: "idp-valid", Proc: "idp-proxy", Metrics: ip.metrics, Load: load{URL: ip.url + "/api/items", Conns: conns, Headers: []string{auth}}},
				benchCase{Name: "idp-rotating", Proc: "idp-proxy", Metrics: ip.metrics, Load: load{URL: ip.url, Conns: conns, Script: rotate, Args: []string{tok.validReqs}}},
				benchCase{Name: "idp-invalid", Proc: "idp-proxy", Metrics: ip.metrics, Reject: true, Load: load{URL: ip.url, Conns: conns, Script: rotate, Args: []string{tok.invalidReqs}}},
			)
		}
		h.runGroup(ctx, fmt.Sprintf("proxy c%d", conns), cases, procs, upURL)
	}
	if h.selectsAny(ingressNames) {
		h.ingressPhase(ctx, upAddr, ip, procs)
	}
	if h.selectsAny(tokenNames) {
		if ip == nil {
			h.rep.note("tokens groups skipped: idp-proxy is not running")
			return nil
		}
		h.tokensPhase(ctx, upURL, bareURL, ip, procs)
	}
	return nil
}

// tokens are the files the provider wrote, as request lists.
type tokens struct {
	single       string   // one valid token
	validReqs    string   // 1,000 distinct valid tokens on /api/items
	invalidReqs  string   // 1,000 invalid tokens on /api/items
	invalid      []string // the invalid tokens
	distinct     []string // every valid token (-distinct of them for the tokens groups)
	distinctReqs string   // the distinct tokens on /api/items
}

// idpProxy is a running idp-proxy.
type idpProxy struct {
	url      string // listener
	metrics  string // ops listener's /metrics
	issuer   string // the provider's
	provider string // the provider's base URL (idp.server_url)
	realm    string
	cache    int // verified_cache_size set in its configuration, 0: its default
	tok      *tokens
}

// startIDPProxy starts the provider (minting max(1,000, distinct) valid and
// 1,000 invalid tokens) and idp-proxy in front of upURL, and checks that it
// forwards a valid token and rejects invalid ones.
func (h *harness) startIDPProxy(ctx context.Context, upURL, tokDir string, distinct int, procs *[]*proc) (*idpProxy, error) {
	if h.bins["idp-proxy"] == "" || h.bins["provider"] == "" {
		return nil, errors.New("idp-proxy or the provider was not built")
	}
	nValid := max(1000, distinct)
	start := time.Now()
	prov, err := h.start("provider", "provider", true, "-client", "bench", "-role", "bench-user",
		"-n", fmt.Sprint(nValid), "-invalid", "1000", "-ttl", "3h", "-out", tokDir)
	if err != nil {
		return nil, err
	}
	*procs = append(*procs, prov)
	var info struct{ URL, Realm, Issuer string }
	select {
	case line := <-prov.firstLine:
		if err := json.Unmarshal([]byte(line), &info); err != nil || info.URL == "" {
			return nil, fmt.Errorf("provider said %q:\n%s", line, prov.tail())
		}
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("provider did not start:\n%s", prov.tail())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	logf("provider ready with %d valid tokens in %v", nValid, time.Since(start).Round(100*time.Millisecond))
	valid, err := readLines(filepath.Join(tokDir, "valid.txt"))
	if err != nil {
		return nil, err
	}
	invalid, err := readLines(filepath.Join(tokDir, "invalid.txt"))
	if err != nil {
		return nil, err
	}
	paths := func(n int) []string {
		p := make([]string, n)
		for i := range p {
			p[i] = "/api/items"
		}
		return p
	}
	tok := &tokens{single: valid[0], invalid: invalid}
	if tok.validReqs, err = writeRequests(tokDir, "valid-requests.txt", paths(1000), valid[:1000]); err != nil {
		return nil, err
	}
	if tok.invalidReqs, err = writeRequests(tokDir, "invalid-requests.txt", paths(len(invalid)), invalid); err != nil {
		return nil, err
	}
	if distinct > 0 {
		tok.distinct = valid[:distinct]
		if tok.distinctReqs, err = writeRequests(tokDir, "distinct-requests.txt", paths(distinct), tok.distinct); err != nil {
			return nil, err
		}
	}
	ip := &idpProxy{issuer: info.Issuer, provider: info.URL, realm: info.Realm, tok: tok}
	if distinct > 0 {
		ip.cache = h.o.cacheSz // only for the tokens groups (-smoke: a small one)
	}
	if ip.issuer == "" {
		ip.issuer = strings.TrimRight(info.URL, "/") + "/realms/" + info.Realm
	}
	px, err := h.runIDPProxy(upURL, ip)
	if err != nil && ip.cache > 0 && strings.Contains(err.Error(), "verified_cache_size") {
		// An idp-proxy without the key: run it with its default cache.
		h.rep.note("idp-proxy refused idp.verified_cache_size (%s): run with its default cache, so the tokens/cache ratio is not the intended one",
			lineWith(err.Error(), "verified_cache_size"))
		ip.cache = 0
		px, err = h.runIDPProxy(upURL, ip)
	}
	if err != nil {
		return nil, err
	}
	*procs = append(*procs, px)
	return ip, nil
}

// runIDPProxy writes idp-proxy's configuration and runs it, and checks it
// forwards a valid token and rejects invalid ones; it sets ip.url and
// ip.metrics.
func (h *harness) runIDPProxy(upURL string, ip *idpProxy) (*proc, error) {
	addr, err := h.freeAddr()
	if err != nil {
		return nil, err
	}
	maddr, err := h.freeAddr()
	if err != nil {
		return nil, err
	}
	cacheLine := ""
	if ip.cache > 0 {
		cacheLine = fmt.Sprintf("\n  verified_cache_size: %d", ip.cache)
	}
	cfgPath := filepath.Join(h.o.work, "idp-proxy.yaml")
	cfg := idpProxyYAML(addr, maddr, fmt.Sprintf("upstream:\n  url: %q\n  max_idle_conns_per_host: 1024\n", upURL), cacheLine, ip)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	px, err := h.start("idp-proxy", "idp-proxy", false, "serve", "--config", cfgPath)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*proc, error) {
		px.stop()
		return nil, err
	}
	base := "http://" + addr
	if err := waitHTTP(px, base+"/public/items", nil, is2xx, 30*time.Second); err != nil {
		return fail(err)
	}
	bearer := func(t string) http.Header { return http.Header{"Authorization": {"Bearer " + t}} }
	if err := waitHTTP(px, base+"/api/items", bearer(ip.tok.single), is2xx, 30*time.Second); err != nil {
		return fail(fmt.Errorf("valid token not accepted: %w", err))
	}
	for _, bad := range ip.tok.invalid[:3] {
		if err := waitHTTP(px, base+"/api/items", bearer(bad), func(c int) bool { return c == 401 }, 5*time.Second); err != nil {
			return fail(fmt.Errorf("invalid token not rejected with 401: %w", err))
		}
	}
	ip.url = base
	ip.metrics = "http://" + maddr + "/metrics"
	if _, err := gcCount(ip.metrics); err != nil {
		h.rep.note("idp-proxy: no GC counts (%v)", err)
		ip.metrics = ""
	}
	return px, nil
}

// idpProxyYAML is the harness's idp-proxy configuration: listener and ops
// listener, the given upstream (and forward_auth) sections, ip's
// provider, the rules (/public/ public, /api/ for the role bench-user,
// everything else denied); idpExtra is appended to the idp section.
func idpProxyYAML(listen, metrics, sections, idpExtra string, ip *idpProxy) string {
	return fmt.Sprintf(`# written by bench/run
listen: %q
metrics_listen: %q
%sidp:
  server_url: %q
  realm: %q
  client_id: bench
  optional_audiences: [account]%s
routes:
  - match: /public/
    public: true
  - match: /api/
    roles: [bench-user]
default_policy: deny
server:
  drain_delay: 1ms # no 5 s drain when the harness stops it
log:
  format: json
  level: warn
`, listen, metrics, sections, ip.provider, ip.realm, idpExtra)
}

// lineWith returns the first line of s that contains sub, trimmed.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return firstLine(s)
}
