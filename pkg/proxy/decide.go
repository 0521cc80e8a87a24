package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/urlpath"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// verdict is the proxy's judgement of a request. Nothing is written while
// it is made: ServeHTTP answers it with refuse, Decide reports it.
// identity returns the verified identity of the request: the one
// forwarded, or the one a guard refused (403); nil without a valid token.
func (v *verdict) identity() *idp.Identity {
	if v.id != nil {
		return v.id
	}
	return v.idp.Identity
}

type verdict struct {
	rule *rule
	dec  decision
	// id is the verified identity forwarded upstream: set when allowed,
	// and on public routes when the request carried a valid token.
	id *idp.Identity
	// idp is the plugin's verdict when the refusal is the plugin's (401,
	// 400 invalid_request, 403 insufficient_scope, 503): byIDP is set.
	idp   idp.Verdict
	byIDP bool
	// status and detail are the proxy's own refusals (400, 403, 405).
	status int
	detail string
	// cookies are the plugin's session cookies to set on the answer (a
	// refreshed session, or the deletion of one that ended).
	cookies []*http.Cookie
	// orig is the original request a forward-auth verify request
	// described (nil otherwise); nginx tells nginx's auth_request, which
	// takes no redirect.
	orig  *http.Request
	nginx bool
	// challenge: the proxy's own 401 carries the Bearer challenge.
	challenge bool
}

// refused reports whether the request is answered by the proxy.
func (v *verdict) refused() bool { return v.status != 0 || v.byIDP }

// answerStatus is the status of the refusal, 0 when the request goes on.
func (v *verdict) answerStatus() int {
	if v.byIDP {
		return v.idp.Status()
	}
	return v.status
}

// refuse writes the answer of a refused verdict: problem+json, or the
// refusal page for a browser navigation (idp.WantsPage).
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, v verdict) {
	w, done := asGRPC(w, r) // a gRPC client reads only grpc-status
	defer done()
	if v.byIDP {
		p.plugin.WriteVerdict(w, r, v.idp)
		return
	}
	if v.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", allowedMethods)
	}
	if v.challenge {
		w.Header().Set("WWW-Authenticate", p.challenge)
	}
	p.plugin.WriteProblem(w, r, v.status, v.detail)
}

// allowedMethods is the Allow header of the proxy's 405 answers.
const allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

// decide checks the request's method and path, picks the rule and applies
// it. r.Host must already be canonical (see serve).
func (p *Proxy) decide(r *http.Request) verdict {
	return p.judge(r, p.servesAuthPath(r.URL.Path))
}

// servesAuthPath reports whether path is one of the /auth routes the proxy
// serves itself.
func (p *Proxy) servesAuthPath(path string) bool {
	return p.authRoutes != nil && urlpath.Under(path, p.authPrefix)
}

// judge is decide for a request whose path serve has already placed
// (auth: servesAuthPath), so that it is placed once a request.
func (p *Proxy) judge(r *http.Request, auth bool) verdict {
	bad := func(status int, detail string) verdict {
		return verdict{rule: p.badRule, dec: decBadRequest, status: status, detail: detail}
	}
	switch r.Method {
	case http.MethodConnect, http.MethodTrace:
		return bad(http.StatusMethodNotAllowed, r.Method+" is not supported by the proxy")
	}
	if !upperCase(r.Method) {
		// Rules match methods case-sensitively ("POST /shorten" does not
		// match "post"), but upstreams such as Django, Flask and Express
		// upper-case the method: "post /shorten" would be judged by another
		// rule (or the default) and served as POST.
		return bad(http.StatusMethodNotAllowed, "method names are case-sensitive and must be upper case")
	}
	if reason := checkPath(r.URL.EscapedPath()); reason != "" {
		return bad(http.StatusBadRequest, reason)
	}
	if auth {
		return verdict{rule: p.authRule, dec: decAuthRoute}
	}
	if isPreflight(r) {
		// A preflight is judged by the rule of the request it announces;
		// a browser sends it without credentials.
		if rl := p.preflightTarget(r); rl != nil && rl.cors != nil {
			return verdict{rule: rl, dec: decPreflight}
		}
		if p.cfg.SkipAuthPreflight {
			return verdict{rule: p.preflightRule, dec: decPublic}
		}
	}
	rl := p.rules.match(r)
	if !p.rules.caseSafe(r, rl) {
		return bad(http.StatusBadRequest, "the path differs only in letter case from a path another rule protects")
	}
	if rl.cert != nil {
		if v := p.checkClientCert(r, rl); v != nil {
			return *v
		}
		if rl.cert.tokenOptional {
			// Admitted by the certificate; a token is taken as on a
			// public route.
			v := verdict{rule: rl, dec: decAllowed}
			iv := p.authorize(r, rl, nil)
			if iv.Allowed() {
				v.id = iv.Identity
			}
			v.cookies = iv.Cookies
			return v
		}
	}
	switch rl.policy {
	case policyDeny:
		return verdict{rule: rl, dec: decDenied, status: http.StatusForbidden, detail: "access to this path is denied by the proxy's policy"}
	case policyPublic:
		// A token on a public route: forward its identity when it is
		// valid, otherwise go on anonymously (rewrite drops it).
		v := verdict{rule: rl, dec: decPublic}
		iv := p.authorize(r, rl, nil)
		if iv.Allowed() {
			v.id = iv.Identity
		}
		v.cookies = iv.Cookies
		return v
	}
	iv := p.authorize(r, rl, rl.guards)
	if !iv.Allowed() {
		if iv.Outcome == idp.NoToken && errors.Is(iv.Err, idp.ErrCrossOrigin) {
			// The plugin took the token cookie of a cross-origin unsafe
			// request for no credential (CSRF): in COOKIE mode the proxy
			// turns the cookie into a bearer token, which upstreams rightly
			// treat as immune to CSRF, so the request is refused outright.
			return verdict{rule: rl, dec: decForbidden, status: http.StatusForbidden,
				detail: "cross-origin request refused: the token cookie is not accepted on cross-origin POST, PUT, PATCH or DELETE"}
		}
		return verdict{rule: rl, dec: decisionOf(iv.Outcome), idp: iv, byIDP: true}
	}
	return verdict{rule: rl, dec: decAllowed, id: iv.Identity, cookies: iv.Cookies}
}

// isPreflight reports whether r is a CORS preflight request.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// preflightTarget returns the rule of the request preflight r announces
// (its Access-Control-Request-Method on its path), when a rule has a CORS
// policy and that request would be judged by the rule whatever the letter
// case; nil otherwise.
func (p *Proxy) preflightTarget(r *http.Request) *rule {
	if !p.rules.cors {
		return nil
	}
	r2 := *r
	r2.Method = r.Header.Get(hdrACRM)
	rl := p.rules.match(&r2)
	if rl.cors == nil || !p.rules.caseSafe(&r2, rl) {
		return nil
	}
	return rl
}

// authorize asks the plugin, timing verifications (not requests without
// a token) in the verify histogram, and records a span of rule rl when
// tracing.
func (p *Proxy) authorize(r *http.Request, rl *rule, guards []idp.Guard) idp.Verdict {
	t0 := time.Now()
	v := p.plugin.AuthorizeMode(r, p.dpopMode(rl), guards...)
	if v.Outcome != idp.NoToken {
		p.metrics.verify.Observe(time.Since(t0).Seconds())
		if v.Outcome == idp.InvalidToken {
			p.countPossession(v)
		}
	}
	if p.tracer != nil {
		p.authorizeSpan(r, rl, v, t0)
	}
	return v
}

func decisionOf(o idp.Outcome) decision {
	switch o {
	case idp.NoToken:
		return decNoToken
	case idp.Unavailable:
		return decUnavailable
	case idp.Forbidden:
		return decForbidden
	case idp.Allowed:
		return decAllowed
	}
	return decInvalid
}

// Decision is how the proxy judges a request, as Decide reports it.
type Decision struct {
	Rule     string `json:"rule"`     // the rule's pattern, or (default), (excluded) PATH, (auth), (invalid)
	Decision string `json:"decision"` // allowed, public, no_token, invalid_token, forbidden, denied, unavailable, bad_request, auth_route, preflight
	Status   int    `json:"status"`   // the proxy's answer, or 0 when the request would be forwarded
	User     string `json:"user,omitempty"`
	// Clause names the rule's clause that refused a forbidden request
	// ("roles", "groups", "claims:tid", "email_domains"), as the 403 body
	// does.
	Clause string `json:"clause,omitempty"`
}

// Decide reports how the proxy judges method and target carrying the
// access token raw ("" for none): the verdict ServeHTTP reaches for that
// request, by the same code, without forwarding or writing anything.
// target is a path with an optional query ("/admin/x?y=1", judged on no
// particular host: host rules do not apply), or an absolute http(s) URL
// ("https://api.example.com/admin/x"), whose host is judged as ServeHTTP
// judges the Host header (lower case, no trailing dot).
func (p *Proxy) Decide(ctx context.Context, method, target, raw string) (Decision, error) {
	notRequest := fmt.Errorf("proxy: %s %q is not a request", method, target)
	if method == "" || strings.ContainsAny(method, " \t\r\n") {
		return Decision{}, notRequest
	}
	var host string
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		abs, err := url.Parse(target)
		if err != nil || abs.Host == "" || abs.User != nil || abs.Fragment != "" {
			return Decision{}, notRequest
		}
		host, target = canonicalHost(abs.Host), abs.RequestURI()
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || !strings.HasPrefix(target, "/") {
		return Decision{}, notRequest
	}
	r := (&http.Request{Method: method, URL: u, RequestURI: target, Host: host, Header: http.Header{},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(ctx)
	if raw != "" {
		if p.tokenCookie != "" {
			r.AddCookie(&http.Cookie{Name: p.tokenCookie, Value: raw})
		} else {
			r.Header.Set("Authorization", "Bearer "+raw)
		}
	}
	v := p.decide(r)
	d := Decision{Rule: v.rule.label, Decision: v.dec.String(), Status: v.answerStatus(), Clause: v.idp.Clause}
	if v.id != nil {
		d.User = v.id.User.Sub
	} else if v.idp.Identity != nil {
		d.User = v.idp.Identity.User.Sub
	}
	return d, nil
}
