package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Forward-auth through nginx. The groups "ingress cN"
// interleave, in front of the same upstream with the same valid token:
//
//   - nginx-only: nginx alone, deploy/ingress/nginx.conf without its
//     auth_request (derived from the shipped file: same upstream blocks,
//     keep-alive, headers);
//   - nginx-forward-auth: the shipped file as is (addresses rewritten),
//     nginx asking idp-proxy (forward-auth only: no upstream, verdicts on
//     forward_auth.listen) for a verdict on every request, with the same
//     rules as the harness's idp-proxy;
//   - idp-proxy: the harness's idp-proxy as the reverse proxy.
//
// Without nginx the groups are skipped with a note; nothing in them fails
// the run.

// The cases of the ingress groups, in order.
const (
	ingNginx = "nginx-only"
	ingFA    = "nginx-forward-auth"
	ingIDP   = "idp-proxy"
	ingFAIDP = "idp-proxy-fa" // the forward-auth idp-proxy process
)

var ingressCases = []string{ingNginx, ingFA, ingIDP}

// ingressNote starts the notes of the ingress groups (the section of the
// results page shows them).
const ingressNote = "forward-auth through nginx: "

// The shipped nginx.conf's fixed addresses.
const (
	shippedFront  = "127.0.0.1:8080"
	shippedLogin  = "127.0.0.1:4180"
	shippedVerify = "127.0.0.1:4181"
	shippedApp    = "127.0.0.1:8000"
)

// ingressGroups are the names of the ingress groups, for -only.
func (h *harness) ingressGroups() []string {
	var g []string
	for _, c := range h.o.conns {
		g = append(g, fmt.Sprintf("ingress c%d", c))
	}
	return g
}

// findNginx returns the nginx binary (Debian: /usr/sbin/nginx), or "".
func findNginx() string {
	for _, p := range []string{"/usr/sbin/nginx", "/usr/bin/nginx"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	p, _ := exec.LookPath("nginx")
	return p
}

// ingressPhase runs the ingress groups against the upstream at upAddr and
// the harness's idp-proxy ip.
func (h *harness) ingressPhase(ctx context.Context, upAddr string, ip *idpProxy, procs []*proc) {
	note := func(format string, a ...any) {
		msg := ingressNote + fmt.Sprintf(format, a...)
		h.rep.note("%s", msg)
		logf("%s", msg)
	}
	bin := findNginx()
	if bin == "" {
		note("groups skipped: nginx is not installed (Debian: apt-get install nginx; CI's .ci/setup installs it)")
		return
	}
	if ip == nil {
		note("groups skipped: idp-proxy is not running")
		return
	}
	shipped, err := os.ReadFile(filepath.Join(h.o.root, "deploy", "ingress", "nginx.conf"))
	if err != nil {
		note("groups skipped: %v", err)
		return
	}
	var local []*proc
	defer func() {
		for _, p := range local {
			p.stop()
		}
	}()
	fa, login, verify, faMetrics, err := h.runForwardAuthIDP(ip)
	if err != nil {
		note("groups skipped: %s: %v", ingFAIDP, err)
		return
	}
	local = append(local, fa)
	rewrite := func(front string) string {
		return strings.NewReplacer(shippedFront, front, shippedLogin, login, shippedVerify, verify, shippedApp, upAddr).Replace(string(shipped))
	}
	frontFA, err1 := h.freeAddr()
	frontPlain, err2 := h.freeAddr()
	if err := firstErr(err1, err2); err != nil {
		note("groups skipped: %v", err)
		return
	}
	confPlain, err := withoutAuthRequest(rewrite(frontPlain))
	if err != nil {
		note("groups skipped: nginx alone: %v", err)
		return
	}
	ngPlain, err := h.startNginx(ingNginx, bin, confPlain, "http://"+frontPlain+"/api/items")
	if err != nil {
		note("groups skipped: %v", firstLine(err.Error()))
		return
	}
	local = append(local, ngPlain)
	ngFA, err := h.startNginx(ingFA, bin, rewrite(frontFA), "http://"+frontFA+"/public/items")
	if err != nil {
		note("groups skipped: %v", firstLine(err.Error()))
		return
	}
	local = append(local, ngFA)
	plainURL, faURL := "http://"+frontPlain, "http://"+frontFA
	if err := checkIngress(plainURL, faURL, ip); err != nil {
		note("groups skipped: %v", err)
		return
	}
	// Memory figures: nginx's worker (the master only waits), and the
	// forward-auth idp-proxy.
	all := append(append([]*proc{}, procs...), fa, nginxWorker(ngPlain), nginxWorker(ngFA))
	auth := []string{"Authorization: Bearer " + ip.tok.single}
	for _, conns := range h.o.conns {
		l := func(base string) load { return load{URL: base + "/api/items", Conns: conns, Headers: auth} }
		h.runGroup(ctx, fmt.Sprintf("ingress c%d", conns), []benchCase{
			{Name: ingNginx, Proc: ingNginx, Load: l(plainURL)},
			{Name: ingFA, Proc: ingFAIDP, Metrics: faMetrics, Load: l(faURL)},
			{Name: ingIDP, Proc: "idp-proxy", Metrics: ip.metrics, Load: l(ip.url)},
		}, all, "http://"+upAddr)
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runForwardAuthIDP runs idp-proxy in forward-auth-only mode (upstream.url
// "", verdicts on forward_auth.listen) with ip's provider and rules, and
// checks its verdicts; it returns the process, its main listener (the
// login routes), its verdict listener and its metrics URL.
func (h *harness) runForwardAuthIDP(ip *idpProxy) (p *proc, login, verify, metrics string, err error) {
	var addrs [3]string
	for i := range addrs {
		if addrs[i], err = h.freeAddr(); err != nil {
			return nil, "", "", "", err
		}
	}
	login, verify, maddr := addrs[0], addrs[1], addrs[2]
	sections := fmt.Sprintf("upstream:\n  url: \"\" # forward-auth only\nforward_auth:\n  enabled: true\n  listen: %q\n", verify)
	cfgPath := filepath.Join(h.o.work, ingFAIDP+".yaml")
	if err := os.WriteFile(cfgPath, []byte(idpProxyYAML(login, maddr, sections, "", ip)), 0o600); err != nil {
		return nil, "", "", "", err
	}
	p, err = h.start(ingFAIDP, "idp-proxy", false, "serve", "--config", cfgPath)
	if err != nil {
		return nil, "", "", "", err
	}
	url := "http://" + verify + "/auth/verify"
	hdr := func(token string) http.Header {
		h := http.Header{"X-Original-Uri": {"/api/items"}, "X-Original-Method": {"GET"}}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		return h
	}
	if err = waitHTTP(p, url, hdr(ip.tok.single), is2xx, 30*time.Second); err == nil {
		for _, bad := range append([]string{""}, ip.tok.invalid[:3]...) {
			if err = waitHTTP(p, url, hdr(bad), func(c int) bool { return c == 401 }, 5*time.Second); err != nil {
				err = fmt.Errorf("invalid or missing token not refused with 401: %w", err)
				break
			}
		}
	}
	if err != nil {
		p.stop()
		return nil, "", "", "", err
	}
	metrics = "http://" + maddr + "/metrics"
	if _, err := gcCount(metrics); err != nil {
		h.rep.note("%s%s: no GC counts (%v)", ingressNote, ingFAIDP, err)
		metrics = ""
	}
	return p, login, verify, metrics, nil
}

// startNginx runs nginx in the foreground with conf in a prefix directory
// of its own (with the tmp directory the shipped file names) and waits
// until ready answers 2xx.
func (h *harness) startNginx(name, bin, conf, ready string) (*proc, error) {
	dir := filepath.Join(h.o.work, name)
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o750); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	global := "daemon off;"
	if os.Geteuid() == 0 {
		global += " user root;" // workers must read the private temp directory
	}
	p, err := startProc(name, bin, h.logDir, nil, false, "-p", dir+string(filepath.Separator), "-c", path, "-e", "stderr", "-g", global)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(p, ready, nil, is2xx, 20*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// nginxWorker is a handle on nginx's (first) worker process, named like
// nginx, for its memory figures; nginx itself when the worker is not
// found. It is never stopped: the master ends its workers.
func nginxWorker(master *proc) *proc {
	pid := master.pid()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return master
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return master
	}
	var child int
	if _, err := fmt.Sscan(f[0], &child); err != nil {
		return master
	}
	osp, err := os.FindProcess(child)
	if err != nil {
		return master
	}
	return &proc{name: master.name, cmd: &exec.Cmd{Process: osp}, done: make(chan struct{})}
}

// withoutAuthRequest derives nginx alone from the forward-auth
// configuration: the auth_request target's location and the error_page's
// named location removed, with every line that reads the verdict
// (auth_request, auth_request_set, $idp_* variables, that error_page), and
// the comments. What remains (upstream blocks, keep-alive, the other
// headers, proxy_pass) is the same.
func withoutAuthRequest(conf string) (string, error) {
	code := func(l string) string {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		return strings.TrimRight(l, " \t")
	}
	lines := strings.Split(conf, "\n")
	var drop []string // auth_request targets, error_page named locations
	for _, l := range lines {
		f := strings.Fields(strings.ReplaceAll(code(l), ";", " "))
		switch {
		case len(f) >= 2 && f[0] == "auth_request":
			drop = append(drop, f[1])
		case len(f) >= 3 && f[0] == "error_page" && strings.HasPrefix(f[len(f)-1], "@"):
			drop = append(drop, f[len(f)-1])
		}
	}
	if len(drop) == 0 {
		return "", fmt.Errorf("no auth_request in the forward-auth configuration")
	}
	var out []string
	depth, removed := 0, 0
	for _, l := range lines {
		c := code(l)
		if depth > 0 { // inside a removed block
			depth += strings.Count(c, "{") - strings.Count(c, "}")
			continue
		}
		f := strings.Fields(c)
		if len(f) >= 2 && f[0] == "location" && slices.ContainsFunc(f[1:], func(s string) bool { return slices.Contains(drop, s) }) {
			depth = strings.Count(c, "{") - strings.Count(c, "}")
			removed++
			continue
		}
		if strings.TrimSpace(c) == "" || strings.Contains(c, "auth_request") || strings.Contains(c, "$idp_") ||
			len(f) > 0 && f[0] == "error_page" && slices.ContainsFunc(f, func(s string) bool { return slices.Contains(drop, strings.TrimSuffix(s, ";")) }) {
			continue
		}
		out = append(out, c)
	}
	s := strings.Join(out, "\n") + "\n"
	if removed == 0 || depth != 0 || strings.Contains(s, "auth_request") || strings.Contains(s, "$idp_") || strings.Contains(s, "_idp_verify") {
		return "", fmt.Errorf("could not derive it from the shipped nginx.conf (removed %d locations, depth %d)", removed, depth)
	}
	return s, nil
}

// checkIngress checks the two nginx and idp-proxy before measuring them:
// nginx alone forwards the token, nginx with forward-auth refuses a
// missing or invalid token with 401 and forwards a valid one with the
// identity headers, the same as idp-proxy sends.
func checkIngress(plainURL, faURL string, ip *idpProxy) error {
	client := &http.Client{Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url, token string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b), err
	}
	if c, _, err := get(plainURL+"/api/items", ip.tok.single); err != nil || c != 200 {
		return fmt.Errorf("nginx alone: GET /api/items: %d %v", c, err)
	}
	for i, bad := range append([]string{""}, ip.tok.invalid[:3]...) {
		if c, _, err := get(faURL+"/api/items", bad); err != nil || c != 401 {
			return fmt.Errorf("nginx with forward-auth: invalid or missing token #%d: %d %v, want 401", i, c, err)
		}
	}
	c, viaNginx, err := get(faURL+"/api/__bench/identity", ip.tok.single)
	if err != nil || c != 200 {
		return fmt.Errorf("nginx with forward-auth: valid token: %d %v", c, err)
	}
	if !strings.Contains(viaNginx, "user=") || strings.Contains(viaNginx, "user=\n") || !strings.Contains(viaNginx, "bench-user") {
		return fmt.Errorf("nginx with forward-auth: the upstream got no identity headers: %q", viaNginx)
	}
	c, direct, err := get(ip.url+"/api/__bench/identity", ip.tok.single)
	if err != nil || c != 200 || direct != viaNginx {
		return fmt.Errorf("identity headers through nginx %q differ from idp-proxy's %q (%d %v)", viaNginx, direct, c, err)
	}
	return nil
}
