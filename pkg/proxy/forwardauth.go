package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Forward-auth: an ingress (nginx auth_request, Traefik forwardAuth, Caddy
// forward_auth, Envoy ext_authz over HTTP) asks the proxy for the verdict
// on a request it is about to serve itself. The proxy judges the ORIGINAL
// request the ingress describes in headers, by the same code as the
// requests it forwards, and answers 200 with the identity headers (for the
// ingress to copy upstream), or the refusal.

// ForwardAuthConfig turns on the verdict endpoints.
type ForwardAuthConfig struct {
	// Enabled serves GET {auth_prefix}/verify (and oauth2-proxy's spelling
	// GET /oauth2/auth) to trusted sources. [false]
	Enabled bool
	// TrustedCIDRs are the source addresses (the ingress) whose verify
	// requests the proxy's handler answers; from anywhere else they are
	// refused with 403, and their headers are never read. A program that
	// serves ForwardAuthHandler on a listener of its own trusts that
	// listener instead. [none]
	TrustedCIDRs []string
}

// The verify paths: {auth_prefix}/verify, and oauth2-proxy's.
const (
	verifySuffix    = "/verify"
	oauth2ProxyAuth = "/oauth2/auth"
)

// forwardAuth is the compiled ForwardAuthConfig.
type forwardAuth struct {
	verifyPath string
	trusted    []netip.Prefix
}

func compileForwardAuth(c ForwardAuthConfig, authPrefix string) (*forwardAuth, error) {
	if !c.Enabled {
		return nil, nil
	}
	prefix := strings.TrimSuffix(authPrefix, "/")
	if prefix == "" {
		prefix = "/auth"
	}
	fa := &forwardAuth{verifyPath: prefix + verifySuffix}
	var errs []error
	for _, s := range c.TrustedCIDRs {
		p, err := parsePrefix(s)
		if err != nil {
			errs = append(errs, fieldErrorf(fields("ForwardAuth.TrustedCIDRs"), "%s: %q is not a CIDR (10.0.0.0/8) or an address", named("ForwardAuth.TrustedCIDRs"), s))
			continue
		}
		fa.trusted = append(fa.trusted, p)
	}
	return fa, errors.Join(errs...)
}

// isVerify reports whether path is one of the verify paths.
func (fa *forwardAuth) isVerify(path string) bool {
	return fa != nil && (path == fa.verifyPath || path == oauth2ProxyAuth)
}

// trusts reports whether the peer remoteAddr may ask for verdicts.
func (fa *forwardAuth) trusts(remoteAddr string) bool {
	return fa != nil && peerIn(fa.trusted, remoteAddr)
}

// ForwardAuthHandler serves the verdict endpoints to every caller, for a
// listener that only the ingress can reach (idp-proxy's
// forward_auth.listen); other paths are 404. It needs
// ForwardAuthConfig.Enabled.
func (p *Proxy) ForwardAuthHandler() http.Handler { return http.HandlerFunc(p.serveForwardAuth) }

// serveForwardAuth serves one request of the forward-auth listener.
func (p *Proxy) serveForwardAuth(w http.ResponseWriter, r *http.Request) {
	if !p.fa.isVerify(r.URL.Path) {
		problem.Write(w, http.StatusNotFound, "this listener serves forward-auth verdicts only: GET "+p.verifyPathOrDefault()+" or /oauth2/auth")
		return
	}
	p.ServeHTTP(w, withTrust(r))
}

func (p *Proxy) verifyPathOrDefault() string {
	if p.fa == nil {
		return "/auth" + verifySuffix
	}
	return p.fa.verifyPath
}

// trustedKey marks, in a request's context, that it came through
// ForwardAuthHandler's listener.
type trustedKey struct{}

func withTrust(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), trustedKey{}, true))
}

// serveVerify answers a verify request: 403 from an untrusted source, 400
// when the original request is not described exactly once, else the
// verdict on the original request.
func (p *Proxy) serveVerify(w http.ResponseWriter, r *http.Request) verdict {
	if r.Context().Value(trustedKey{}) == nil && !p.fa.trusts(r.RemoteAddr) {
		return verdict{rule: p.verifyRule, dec: decDenied, status: http.StatusForbidden,
			detail: "forward-auth verdicts are given to the ingress only (forward_auth.trusted_cidrs or forward_auth.listen)"}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return verdict{rule: p.verifyRule, dec: decBadRequest, status: http.StatusMethodNotAllowed, detail: "use GET"}
	}
	orig, nginx, err := originalRequest(r)
	if err != nil {
		return verdict{rule: p.verifyRule, dec: decBadRequest, status: http.StatusBadRequest, detail: err.Error()}
	}
	v := p.decide(orig)
	v.orig, v.nginx = orig, nginx
	return v
}

// answerVerify writes the verdict of a verify request: the refusal (nginx
// gets 401 rather than a redirect: auth_request accepts only 2xx, 401 and
// 403), or 200 with the identity headers and the session's cookies.
func (p *Proxy) answerVerify(w http.ResponseWriter, v verdict) {
	if v.orig == nil || v.status != 0 && !v.byIDP {
		status := v.status
		if v.orig == nil && status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", "GET, HEAD") // the verify request's own method
		}
		if v.challenge {
			w.Header().Set("WWW-Authenticate", p.challenge) // a client certificate is missing
		}
		if v.nginx && v.orig != nil && status != http.StatusForbidden && status != http.StatusUnauthorized {
			// auth_request passes on only 401 and 403 (anything else is
			// its 500): a refused original request (400, 405) is a 403.
			status = http.StatusForbidden
		}
		if v.orig != nil && !v.nginx {
			// Traefik and Caddy pass the refusal's body to the browser.
			p.plugin.WriteProblem(w, v.orig, status, v.detail)
			return
		}
		problem.Write(w, status, v.detail)
		return
	}
	orig := v.orig
	if v.byIDP {
		if v.nginx {
			if v.idp.Outcome == idp.NoToken && p.plugin.Config().Session != nil && idp.IsNavigation(orig) {
				// nginx takes 401 only; its error_page sends the browser
				// here (auth_request_set from this header).
				w.Header().Set("X-Auth-Request-Redirect", p.plugin.LoginURLFor(orig))
			}
			orig = orig.Clone(orig.Context())
			orig.Header.Del("Accept") // never a login redirect: 401
		}
		p.plugin.WriteVerdict(w, orig, v.idp)
		return
	}
	for _, c := range v.cookies {
		http.SetCookie(w, c)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	// Every identity header is in the answer, empty when there is no
	// identity (a public route without a token): an ingress that copies
	// them then overwrites the client's copies. (Caddy 2.6's copy_headers
	// writes its placeholder text "{http.reverse_proxy.header.X-...}" for
	// a header the answer lacks.)
	hr := p.headers
	if p.ups != nil {
		if up := p.ups.pick(orig); up != nil {
			hr = up.headers // the identity headers of the app the ingress serves
		}
	}
	for _, name := range []string{hr.user, hr.username, hr.email, hr.roles} {
		if name != "" {
			h[name] = []string{""}
		}
	}
	for _, c := range hr.claims {
		h[c.name] = []string{""}
	}
	if hr.forwardToken || hr.cred != nil {
		h["Authorization"] = []string{""}
	}
	h[DPoPJKTHeader], h["Dpop"] = []string{""}, []string{""}
	if v.id != nil {
		hr.setIdentity(h, v.id, nil)
		hr.forwardProof(h, orig.Header, v.id) // the ingress copies them as the identity headers
	}
	if hr.cred != nil && !p.verdictCredential(w, orig, hr.cred, v.id) {
		return // refused or unavailable: answered
	}
	w.WriteHeader(http.StatusOK)
}

// splitAbsolute splits an absolute http(s) URL into its host and its
// request URI exactly as written (no re-encoding).
func splitAbsolute(s string) (host, uri string, err error) {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return "", "", errors.New("X-Original-URL must be an absolute http(s) URL")
		}
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return rest, "/", nil
	}
	if strings.ContainsAny(rest[:i], "@?#") {
		return "", "", errors.New("X-Original-URL is malformed")
	}
	return rest[:i], rest[i:], nil
}

// originalRequest builds the request the ingress describes: nginx's
// auth_request as commonly configured (X-Original-URI, X-Original-Method;
// ingress-nginx: X-Original-URL),
// or Traefik's and Caddy's (X-Forwarded-Uri, X-Forwarded-Method), with
// X-Forwarded-Host and X-Forwarded-Proto, and the credentials (and the
// headers that tell a browser navigation) of the verify request. Each
// header must appear at most once; the URI must be origin-form.
func originalRequest(r *http.Request) (*http.Request, bool, error) {
	h := r.Header
	one := func(name string) (string, error) {
		vals := h.Values(name)
		switch len(vals) {
		case 0:
			return "", nil
		case 1:
			return vals[0], nil
		}
		return "", fmt.Errorf("%s is given more than once", name)
	}
	uri, err := one("X-Original-Uri")
	if err != nil {
		return nil, false, err
	}
	var urlHost string
	if uri == "" {
		// ingress-nginx's auth-url sends the whole URL instead.
		full, err := one("X-Original-Url")
		if err != nil {
			return nil, false, err
		}
		if full != "" {
			if urlHost, uri, err = splitAbsolute(full); err != nil {
				return nil, false, err
			}
		}
	}
	nginx := uri != ""
	methodHeader := "X-Original-Method"
	if !nginx {
		if uri, err = one("X-Forwarded-Uri"); err != nil {
			return nil, false, err
		}
		methodHeader = "X-Forwarded-Method"
	}
	if uri == "" {
		return nil, false, errors.New("the original request is not described: X-Original-URI (nginx) or X-Forwarded-Uri (Traefik, Caddy) is required")
	}
	method, err := one(methodHeader)
	if err != nil {
		return nil, false, err
	}
	if method == "" {
		method = http.MethodGet
	}
	host, err := one("X-Forwarded-Host")
	if err != nil {
		return nil, false, err
	}
	if host == "" {
		host = urlHost
	}
	if host == "" {
		host = r.Host
	}
	proto, err := one("X-Forwarded-Proto")
	if err != nil {
		return nil, false, err
	}
	if proto != "" && proto != "http" && proto != "https" {
		return nil, false, fmt.Errorf("X-Forwarded-Proto %q: want http or https", proto)
	}
	if !strings.HasPrefix(uri, "/") || strings.ContainsAny(method, " \t\r\n") || strings.ContainsAny(host, " \t\r\n/") {
		return nil, false, errors.New("the original request is malformed")
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, false, errors.New("the original URI is malformed")
	}
	orig := (&http.Request{Method: method, URL: u, RequestURI: uri, Host: canonicalHost(host),
		Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: r.RemoteAddr}).WithContext(r.Context())
	for _, k := range []string{"Authorization", "Dpop", "Cookie", "Accept", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Origin", "X-Requested-With"} {
		if v, ok := h[k]; ok {
			orig.Header[k] = v
		}
	}
	if proto == "https" {
		orig.URL.Scheme = "https"
	}
	return orig, nginx, nil
}
