package main

import (
	"fmt"
	"strings"
)

// Forward-auth through nginx (groups "ingress cN", see
// ingress.go): ratios and the results page's section.

// ingressGroupsMeasured returns the ingress groups with results.
func (r *report) ingressGroupsMeasured() []string {
	var out []string
	for _, s := range r.Summary {
		if strings.HasPrefix(s.Group, "ingress c") && (len(out) == 0 || out[len(out)-1] != s.Group) {
			out = append(out, s.Group)
		}
	}
	return out
}

// ingressRatios adds forward-auth through nginx against nginx alone and
// against idp-proxy as the reverse proxy to r.Ratios.
func (r *report) ingressRatios() {
	for _, g := range r.ingressGroupsMeasured() {
		fa, ok := r.find(g, ingFA)
		if !ok {
			continue
		}
		for _, c := range []string{ingNginx, ingIDP} {
			if x, ok := r.find(g, c); ok {
				r.Ratios = append(r.Ratios, ratio{g + ": " + ingFA + " / " + c, fa.RPS / x.RPS})
			}
		}
	}
}

// ingressMarkdown writes the results page's section on the ingress
// benchmark, or why it did not run.
func (r *report) ingressMarkdown(p func(string, ...any)) {
	groups := r.ingressGroupsMeasured()
	var notes []string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, ingressNote) {
			notes = append(notes, strings.TrimPrefix(n, ingressNote))
		}
	}
	if len(groups) == 0 && len(notes) == 0 {
		return
	}
	p("## Forward-auth through nginx")
	p("")
	p("The same upstream (bench/upstream) and the same valid RS256 token on every request, interleaved: `%s` = nginx alone, `deploy/ingress/nginx.conf` without its `auth_request` (derived from the shipped file: same `upstream` blocks with `keepalive 64`, HTTP/1.1, headers); `%s` = the shipped file as is (addresses rewritten): nginx asks idp-proxy, forward-auth only (`upstream.url: \"\"`, verdicts on `forward_auth.listen`), for a verdict on every request (`auth_request`, a protected rule: `/api/` for the role bench-user) and copies the identity headers upstream; `%s` = idp-proxy as the reverse proxy, same rules and token. nginx runs with the shipped file's `worker_processes` (1). Before measuring, the harness checks that nginx with forward-auth refuses a missing or invalid token with 401 and that the upstream gets the same identity headers through it as from idp-proxy.", ingNginx, ingFA, ingIDP)
	p("")
	for _, n := range notes {
		p("- %s", n)
	}
	if len(notes) > 0 {
		p("")
	}
	if len(groups) == 0 {
		return
	}
	p("| group | case | req/s | p50 ms | p99 ms | GC per 1k req | peak RSS (process) |")
	p("|---|---|---|---|---|---|---|")
	for _, g := range groups {
		for _, c := range ingressCases {
			if x, ok := r.find(g, c); ok {
				p("| %s | %s | %.0f | %.3f | %.3f | %s | %.1f MiB (%s) |", g, c, x.RPS, x.P50ms, x.P99ms, gcCell(x), float64(x.PeakKiB)/1024, x.Process)
			}
		}
	}
	p("")
	p("| group | req/s %s / %s | req/s %s / %s | added p50 vs nginx alone | added p50 vs idp-proxy |", ingFA, ingNginx, ingFA, ingIDP)
	p("|---|---|---|---|---|")
	for _, g := range groups {
		fa, ok := r.find(g, ingFA)
		if !ok {
			continue
		}
		row := "| " + g + " |"
		for _, c := range []string{ingNginx, ingIDP} {
			if x, ok := r.find(g, c); ok {
				row += fmt.Sprintf(" %.2f |", fa.RPS/x.RPS)
			} else {
				row += " – |"
			}
		}
		for _, c := range []string{ingNginx, ingIDP} {
			if x, ok := r.find(g, c); ok {
				row += fmt.Sprintf(" %+.3f ms |", fa.P50ms-x.P50ms)
			} else {
				row += " – |"
			}
		}
		p("%s", row)
	}
	p("")
	p("Closed loop at saturation on a shared 2-core machine (wrk, nginx's worker, idp-proxy and the upstream compete for the same cores): the ratios compare the configurations, the latencies are mostly run-queue waits. Peak RSS of `%s` is nginx's worker; of `%s`, the forward-auth idp-proxy.", ingNginx, ingFA)
	p("")
}
