package main

import (
	"fmt"
	"strings"
)

// idp-proxy with many distinct tokens (groups "tokens cN" and
// "tokens open R/s", see tokens.go): targets and the results page's section.

// tokenCases are the cases of the tokens groups, in order.
var tokenCases = []string{"bare-proxy", "idp-repeated", "idp-distinct", "naive-distinct", "o2p-repeated", "o2p-distinct"}

const (
	tokensDistinctMin = 0.60 // idp-proxy with distinct tokens / bare proxy
	tokensRepeatedMin = 0.95 // idp-proxy with one repeated token / bare proxy
	tokensAddedP99Max = 1.0  // ms, open loop at 1,000 requests/s
	tokensPeakMiB     = 96.0 // idp-proxy's peak RSS in every case
	tokensTargetRate  = 1000
)

// cpuCell formats a summary's CPU time per request.
func cpuCell(s summary) string {
	if s.CPUus <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", s.CPUus)
}

func pctMargin(v, want float64) string { return fmt.Sprintf("%+.0f%%", (v/want-1)*100) }

// tokenGroups returns the closed-loop and open-loop groups measured.
func (r *report) tokenGroups() (closed, open []string) {
	seen := map[string]bool{}
	for _, s := range r.Summary {
		if seen[s.Group] {
			continue
		}
		seen[s.Group] = true
		switch {
		case strings.HasPrefix(s.Group, "tokens open "):
			open = append(open, s.Group)
		case strings.HasPrefix(s.Group, "tokens c"):
			closed = append(closed, s.Group)
		}
	}
	return closed, open
}

// tokenTargets adds the tokens groups' ratios to r.Ratios and sets r.TokenTargets.
func (r *report) tokenTargets() {
	r.TokenTargets = nil
	tgt := func(name, want, got string, met bool, margin string) {
		r.TokenTargets = append(r.TokenTargets, target{name, want, got, met, margin})
	}
	closed, open := r.tokenGroups()
	for _, g := range closed {
		bare, ok := r.find(g, "bare-proxy")
		if !ok {
			continue
		}
		for _, c := range tokenCases[1:] {
			if x, ok := r.find(g, c); ok {
				r.Ratios = append(r.Ratios, ratio{g + ": " + c + " / bare-proxy", x.RPS / bare.RPS})
			}
		}
		if x, ok := r.find(g, "idp-repeated"); ok {
			v := x.RPS / bare.RPS
			tgt(g+": idp-proxy, one repeated token / bare proxy", fmt.Sprintf("≥ %.2f", tokensRepeatedMin), fmt.Sprintf("%.2f", v), v >= tokensRepeatedMin, pctMargin(v, tokensRepeatedMin))
		}
		if x, ok := r.find(g, "idp-distinct"); ok {
			v := x.RPS / bare.RPS
			tgt(g+": idp-proxy, distinct tokens / bare proxy", fmt.Sprintf("≥ %.2f", tokensDistinctMin), fmt.Sprintf("%.2f", v), v >= tokensDistinctMin, pctMargin(v, tokensDistinctMin))
			if n, ok := r.find(g, "naive-distinct"); ok {
				w := x.RPS / n.RPS
				tgt(g+": idp-proxy / naive checker, distinct tokens", "> 1.00", fmt.Sprintf("%.2f", w), w > 1, pctMargin(w, 1))
			} else {
				tgt(g+": idp-proxy / naive checker, distinct tokens", "> 1.00", "not measured", false, "")
			}
		}
		for _, c := range []string{"repeated", "distinct"} {
			a, ok1 := r.find(g, "idp-"+c)
			b, ok2 := r.find(g, "o2p-"+c)
			if ok1 && ok2 {
				r.Ratios = append(r.Ratios, ratio{g + ": idp-" + c + " / o2p-" + c, a.RPS / b.RPS})
			}
		}
	}
	for _, g := range open {
		bare, ok := r.find(g, "bare-proxy")
		if !ok || bare.Rate != tokensTargetRate {
			continue
		}
		for _, c := range []string{"idp-repeated", "idp-distinct"} {
			if x, ok := r.find(g, c); ok {
				added := x.P99ms - bare.P99ms
				tgt(fmt.Sprintf("%s: added p99 vs bare proxy, %s", g, c), fmt.Sprintf("≤ %.0f ms", tokensAddedP99Max),
					fmt.Sprintf("%+.2f ms (%.2f vs %.2f)", added, x.P99ms, bare.P99ms), added <= tokensAddedP99Max, fmt.Sprintf("%+.2f ms", tokensAddedP99Max-added))
			}
		}
	}
	var worst summary
	for _, s := range r.Summary {
		if s.Process == "idp-proxy" && s.PeakKiB > worst.PeakKiB {
			worst = s
		}
	}
	if len(closed)+len(open) > 0 && worst.PeakKiB > 0 {
		mb := float64(worst.PeakKiB) / 1024
		tgt("idp-proxy peak RSS, every case (worst: "+worst.Group+" / "+worst.Case+")", fmt.Sprintf("≤ %.0f MiB", tokensPeakMiB),
			fmt.Sprintf("%.1f MiB", mb), mb <= tokensPeakMiB, fmt.Sprintf("%+.1f MiB", tokensPeakMiB-mb))
	}
}

// tokensMarkdown writes the results page's section on many distinct tokens.
func (r *report) tokensMarkdown(p func(string, ...any)) {
	closed, open := r.tokenGroups()
	if len(closed)+len(open) == 0 {
		return
	}
	p("## Many distinct tokens")
	p("")
	p("idp-proxy verifies each token once and caches the result (`idp.verified_cache_size`, 10,000 by default). Here every request of the `*-distinct` cases carries a different valid RS256 token, cycling through more tokens than the cache holds, from where the previous run stopped, so nearly every request is a cache miss and pays a signature verification. Compared in the same interleaved group: `bare-proxy` (bench/bareproxy, no authentication); `idp-repeated` (one valid token on every request: cache hits); `idp-distinct`; `naive-distinct` = bench/naiveproxy, the bare proxy verifying every token with golang-jwt/jwt/v5 + keyfunc/v3 (RS256, iss, exp, aud), no cache; `o2p-*` = oauth2-proxy with `--skip-jwt-bearer-tokens` (go-oidc verification, no cache), as shipped: its upstream transport keeps Go's default 2 idle connections per host.")
	p("")
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "tokens groups:") || strings.Contains(n, o2pName) || strings.Contains(n, "verified_cache_size") {
			p("- %s", n)
		}
	}
	for _, pb := range r.Peers {
		if pb.Built {
			p("- %s %s built from the Go module proxy in %s.", pb.Name, pb.Version, pb.Took)
		}
	}
	p("")
	p("| target | want | got | met | margin |")
	p("|---|---|---|---|---|")
	for _, t := range r.TokenTargets {
		met := "met"
		if !t.Met {
			met = "**missed**"
		}
		p("| %s | %s | %s | %s | %s |", t.Name, t.Want, t.Got, met, t.Margin)
	}
	p("")
	if len(closed) > 0 {
		p("### Closed loop (wrk), requests/s and ratio to the bare proxy of the same group")
		p("")
		head, sep := "| case |", "|---|"
		for _, g := range closed {
			head += fmt.Sprintf(" %s req/s | / bare | CPU µs/req | GC per 1k req | peak RSS |", g)
			sep += "---|---|---|---|---|"
		}
		p("%s", head)
		p("%s", sep)
		for _, c := range tokenCases {
			row, any := "| "+c+" |", false
			for _, g := range closed {
				x, ok := r.find(g, c)
				bare, okb := r.find(g, "bare-proxy")
				if !ok || !okb {
					row += " – | – | – | – | – |"
					continue
				}
				any = true
				row += fmt.Sprintf(" %.0f | %.2f | %s | %s | %.1f MiB |", x.RPS, x.RPS/bare.RPS, cpuCell(x), gcCell(x), float64(x.PeakKiB)/1024)
			}
			if any {
				p("%s", row)
			}
		}
		p("")
		r.o2pComparison(p, closed, open)
	}
	if len(open) > 0 {
		p("### Open loop (fixed rate), latency from each request's scheduled send time")
		p("")
		p("| group | case | achieved req/s | p50 ms | p99 ms | p99.9 ms | max ms | added p99 vs bare | late | dropped | errors | GC per 1k req |")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, g := range open {
			bare, okb := r.find(g, "bare-proxy")
			for _, c := range tokenCases {
				x, ok := r.find(g, c)
				if !ok {
					continue
				}
				added := "–"
				if okb && c != "bare-proxy" {
					added = fmt.Sprintf("%+.2f ms", x.P99ms-bare.P99ms)
				}
				p("| %s | %s | %.0f | %.3f | %.3f | %.3f | %.2f | %s | %d | %d | %d | %s |", g, c, x.RPS, x.P50ms, x.P99ms, x.P999ms, x.MaxMs,
					added, x.Late, x.Dropped, x.Errors, gcCell(x))
			}
		}
		p("")
		p("The generator (bench/run/openloop.go) schedules request k at start + k/rate and measures its latency from that time, whether or not it could be sent then (no coordinated omission); a dispatcher thread sleeps with nanosleep and a pool of workers sends. `late`: requests picked up ≥ 1 ms after their scheduled time (their latency still counts from it); `dropped`: not sent within 2 s after the run (a problem). Medians over the rounds; late, dropped and errors are sums.")
		p("")
	}
	p("CPU µs/req: the CPU time (user + system, from /proc/PID/stat) the case's proxy process used during the run per request answered, median over the rounds: the proxy's own cost, apart from the load generator and the upstream that share the machine's CPUs with it.")
	p("GC per 1k req: the process's garbage collections (`%s` on its Prometheus endpoint: idp-proxy's ops listener, oauth2-proxy's `--metrics-address`) per 1,000 requests, median over the rounds; – when the process exports none (bare and naive proxies).", metricGCCount)
	for _, g := range closed {
		if x, ok := r.find(g, "idp-distinct"); ok && x.Cached != nil {
			p("idp-proxy's cache held %d verified tokens after the distinct-token runs (%s).", *x.Cached, g)
			break
		}
	}
	p("")
}

// o2pComparison writes idp-proxy against oauth2-proxy, when measured.
func (r *report) o2pComparison(p func(string, ...any), closed, open []string) {
	var rows []string
	for _, c := range []string{"repeated", "distinct"} {
		row, any := fmt.Sprintf("| %s token(s) |", c), false
		for _, g := range closed {
			a, ok1 := r.find(g, "idp-"+c)
			b, ok2 := r.find(g, "o2p-"+c)
			if ok1 && ok2 {
				any = true
				row += fmt.Sprintf(" %.0f vs %.0f req/s (%.2f×) |", a.RPS, b.RPS, a.RPS/b.RPS)
			} else {
				row += " – |"
			}
		}
		for _, g := range open {
			a, ok1 := r.find(g, "idp-"+c)
			b, ok2 := r.find(g, "o2p-"+c)
			if ok1 && ok2 {
				any = true
				row += fmt.Sprintf(" p99 %.2f vs %.2f ms |", a.P99ms, b.P99ms)
			} else {
				row += " – |"
			}
		}
		if any {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		p("oauth2-proxy was not measured (see the notes).")
		p("")
		return
	}
	p("### idp-proxy against oauth2-proxy")
	p("")
	head, sep := "| tokens |", "|---|"
	for _, g := range append(append([]string{}, closed...), open...) {
		head += " " + g + " |"
		sep += "---|"
	}
	p("%s", head)
	p("%s", sep)
	for _, row := range rows {
		p("%s", row)
	}
	p("")
}

func gcCell(s summary) string {
	if s.GCPer1k < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", s.GCPer1k)
}
