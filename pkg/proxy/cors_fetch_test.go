package proxy

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// This file holds a client of the CORS protocol written from the Fetch
// standard (https://fetch.spec.whatwg.org/#http-cors-protocol): what a
// browser does before it lets a script read an answer. The table tests
// run it against a real proxy, so that they check the outcome a browser
// sees, not header values the proxy happens to write.

// fetchRequest is a script's cross-origin fetch().
type fetchRequest struct {
	method  string            // as the script wrote it (fetch normalizes only DELETE, GET, HEAD, OPTIONS, POST, PUT)
	path    string            // on the proxy
	origin  string            // the document's serialized origin, or "null"
	headers map[string]string // the script's request headers
	include bool              // credentials mode "include" (else "same-origin": none cross-origin)
}

// fetchResult is what the script gets: a network error, or a response
// with the headers it may read.
type fetchResult struct {
	networkError string // why the browser refused, "" when the script reads the answer
	preflighted  bool
	status       int
	readable     http.Header // the headers the script can read
}

// normalizeMethod is Fetch's "normalize a method".
func normalizeMethod(m string) string {
	for _, n := range []string{"DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"} {
		if strings.EqualFold(m, n) {
			return n
		}
	}
	return m
}

// safelistedMethod is Fetch's "CORS-safelisted method".
func safelistedMethod(m string) bool { return m == "GET" || m == "HEAD" || m == "POST" }

// unsafeHeaderNames is Fetch's "CORS-unsafe request-header names":
// lower-cased, sorted. Safelisted are Accept, Accept-Language,
// Content-Language and a Content-Type of the three form types.
func unsafeHeaderNames(h map[string]string) []string {
	var out []string
	for k, v := range h {
		name := strings.ToLower(k)
		switch name {
		case "accept", "accept-language", "content-language":
			continue
		case "content-type":
			mt, _, _ := strings.Cut(strings.ToLower(v), ";")
			if mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" || mt == "text/plain" {
				continue
			}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// headerList is Fetch's "extracting header list values" of a
// comma-separated header; ok is false on a parse failure.
func headerList(h http.Header, name string) (vals []string, present, ok bool) {
	raw, present := h[http.CanonicalHeaderKey(name)]
	if !present {
		return nil, false, true
	}
	for _, v := range strings.Split(strings.Join(raw, ","), ",") {
		v = strings.Trim(v, " \t")
		if v == "" || !isToken(v) {
			return nil, true, false
		}
		vals = append(vals, v)
	}
	return vals, true, true
}

// corsCheck is Fetch's "CORS check" (section 4.10).
func corsCheck(h http.Header, origin string, include bool) string {
	acao := h.Values("Access-Control-Allow-Origin")
	if len(acao) == 0 {
		return "no Access-Control-Allow-Origin"
	}
	if len(acao) > 1 {
		return "several Access-Control-Allow-Origin values"
	}
	if !include && acao[0] == "*" {
		return ""
	}
	if acao[0] != origin {
		return "Access-Control-Allow-Origin " + acao[0] + " is not " + origin
	}
	if !include {
		return ""
	}
	if h.Get("Access-Control-Allow-Credentials") != "true" {
		return "credentials without Access-Control-Allow-Credentials: true"
	}
	return ""
}

// browserFetch runs req against base the way a browser does: a
// preflight when needed (section 4.9, "CORS-preflight fetch"), the
// request, the CORS check, and the filtering of the headers a script may
// read ("CORS-filtered response").
func browserFetch(t *testing.T, base string, req fetchRequest, token string) fetchResult {
	t.Helper()
	method := normalizeMethod(req.method)
	hdrs := map[string]string{}
	for k, v := range req.headers {
		hdrs[k] = v
	}
	if token != "" {
		hdrs["Authorization"] = "Bearer " + token
	}
	unsafe := unsafeHeaderNames(hdrs)
	var res fetchResult
	if !safelistedMethod(method) || len(unsafe) > 0 {
		res.preflighted = true
		pre := map[string]string{"Origin": req.origin, "Access-Control-Request-Method": method}
		if len(unsafe) > 0 {
			pre["Access-Control-Request-Headers"] = strings.Join(unsafe, ",")
		}
		resp, _ := do(t, http.MethodOptions, base+req.path, "", pre, "") // never credentials
		if why := corsCheck(resp.Header, req.origin, req.include); why != "" {
			res.networkError = "preflight: " + why
			return res
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			res.networkError = "preflight: status " + resp.Status
			return res
		}
		methods, _, ok1 := headerList(resp.Header, "Access-Control-Allow-Methods")
		names, _, ok2 := headerList(resp.Header, "Access-Control-Allow-Headers")
		if !ok1 || !ok2 {
			res.networkError = "preflight: unparsable allow lists"
			return res
		}
		if !slices.Contains(methods, method) && !safelistedMethod(method) && (req.include || !slices.Contains(methods, "*")) {
			res.networkError = "preflight: method " + method + " not allowed"
			return res
		}
		allowed := func(n string) bool {
			return slices.ContainsFunc(names, func(a string) bool { return strings.EqualFold(a, n) })
		}
		if _, auth := hdrs["Authorization"]; auth && !allowed("authorization") {
			res.networkError = "preflight: authorization not allowed" // not covered by "*"
			return res
		}
		for _, n := range unsafe {
			if !allowed(n) && (req.include || !slices.Contains(names, "*")) {
				res.networkError = "preflight: header " + n + " not allowed"
				return res
			}
		}
	}
	hdrs["Origin"] = req.origin
	if req.include {
		hdrs["Cookie"] = "theme=dark"
	}
	resp, _ := do(t, method, base+req.path, "", hdrs, "")
	if why := corsCheck(resp.Header, req.origin, req.include); why != "" {
		res.networkError = why
		return res
	}
	res.status = resp.StatusCode
	res.readable = http.Header{}
	exposed, _, _ := headerList(resp.Header, "Access-Control-Expose-Headers")
	for k, v := range resp.Header {
		switch {
		case slices.Contains([]string{"Cache-Control", "Content-Language", "Content-Length", "Content-Type", "Expires", "Last-Modified", "Pragma"}, k),
			slices.ContainsFunc(exposed, func(e string) bool { return strings.EqualFold(e, k) }),
			!req.include && slices.Contains(exposed, "*") && k != "Set-Cookie":
			res.readable[k] = v
		}
	}
	return res
}

// corsUpstream answers 200 with headers of its own: CORS headers that a
// route's policy must replace, and X-Total that only an exposed-headers
// list makes readable. It counts the requests it gets.
func corsUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Expose-Headers", "*")
		w.Header().Set("X-Total", "3")
		w.Header().Set("Vary", "Accept-Encoding")
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// corsRoutes are the rules of the CORS tests.
var corsRoutes = []RouteConfig{
	{Match: "/api/", CORS: CORSConfig{
		AllowedOrigins: []string{"https://app.example.com", "https://*.example.org", "http://127.0.0.1:5173"},
		AllowedMethods: []string{"GET", "POST", "PATCH"},
		AllowedHeaders: []string{"AUTHORIZATION", "content-type", "X-Trace-Id"},
		ExposedHeaders: []string{"X-Total"},
		MaxAge:         600e9,
	}},
	{Match: "PUT /api/items/{id}", CORS: CORSConfig{
		AllowedOrigins: []string{"https://app.example.com"},
		AllowedHeaders: []string{"Authorization", "Content-Type"},
	}},
	{Match: "DELETE /api/items/{id}"}, // no policy: the browser is refused
	{Match: "/cred/", Public: true, CORS: CORSConfig{
		AllowedOrigins:   []string{"https://app.example.com"},
		AllowedHeaders:   []string{"Authorization"},
		AllowCredentials: true,
	}},
	{Match: "/pub/", Public: true, CORS: CORSConfig{
		AllowedOrigins: []string{"*"},
		AllowedHeaders: []string{"*"},
		ExposedHeaders: []string{"*"},
	}},
	{Match: "/plain/", Public: true},
}

func TestCORSFetchStandard(t *testing.T) {
	idpSrv := newProvider(t)
	up, upCount := corsUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.Routes = corsRoutes
	_, srv := startProxy(t, cfg, Options{}, true)
	token := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	const app = "https://app.example.com"
	json := map[string]string{"Content-Type": "application/json"}

	cases := []struct {
		name  string
		req   fetchRequest
		token bool
		// want: "" for a readable answer of status, else the start of the
		// network error.
		want        string
		status      int
		preflighted bool
		readable    []string // headers the script must read
		hidden      []string // headers it must not
	}{
		{name: "simple GET, allowed origin, token", req: fetchRequest{method: "GET", path: "/api/x", origin: app}, token: true,
			want: "", status: 200, preflighted: true, readable: []string{"X-Total"}},
		{name: "simple GET without token: the 401 is readable", req: fetchRequest{method: "GET", path: "/api/x", origin: app},
			status: 401, readable: []string{"Www-Authenticate"}},
		{name: "origin not allowed", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://evil.example.com"},
			want: "no Access-Control-Allow-Origin"},
		{name: "origin differing by scheme", req: fetchRequest{method: "GET", path: "/api/x", origin: "http://app.example.com"},
			want: "no Access-Control-Allow-Origin"},
		{name: "origin differing by port", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://app.example.com:8443"},
			want: "no Access-Control-Allow-Origin"},
		{name: "origin with a suffix", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://app.example.com.evil.net"},
			want: "no Access-Control-Allow-Origin"},
		{name: "null origin, exact list", req: fetchRequest{method: "GET", path: "/api/x", origin: "null"},
			want: "no Access-Control-Allow-Origin"},
		{name: "pattern: a subdomain", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://a.example.org"},
			status: 401},
		{name: "pattern: a deeper subdomain", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://a.b.example.org"},
			status: 401},
		{name: "pattern: not the domain itself", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://example.org"},
			want: "no Access-Control-Allow-Origin"},
		{name: "pattern: not a look-alike domain", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://evilexample.org"},
			want: "no Access-Control-Allow-Origin"},
		{name: "pattern: not another scheme", req: fetchRequest{method: "GET", path: "/api/x", origin: "http://a.example.org"},
			want: "no Access-Control-Allow-Origin"},
		{name: "pattern: not an empty label", req: fetchRequest{method: "GET", path: "/api/x", origin: "https://.example.org"},
			want: "no Access-Control-Allow-Origin"},
		{name: "loopback origin with a port", req: fetchRequest{method: "GET", path: "/api/x", origin: "http://127.0.0.1:5173"}, token: true,
			status: 200, preflighted: true},
		{name: "preflighted POST with JSON and a token", req: fetchRequest{method: "POST", path: "/api/x", origin: app, headers: json}, token: true,
			status: 200, preflighted: true, readable: []string{"X-Total"}},
		{name: "header names are case-insensitive", req: fetchRequest{method: "GET", path: "/api/x", origin: app, headers: map[string]string{"x-TRACE-id": "1"}}, token: true,
			status: 200, preflighted: true},
		{name: "header not allowed", req: fetchRequest{method: "GET", path: "/api/x", origin: app, headers: map[string]string{"X-Other": "1"}}, token: true,
			want: "preflight: header x-other not allowed", preflighted: true},
		{name: "method allowed", req: fetchRequest{method: "PATCH", path: "/api/x", origin: app}, token: true,
			status: 200, preflighted: true},
		{name: "method case: patch is not PATCH", req: fetchRequest{method: "patch", path: "/api/x", origin: app}, token: true,
			want: "preflight: method patch not allowed", preflighted: true},
		{name: "method not allowed", req: fetchRequest{method: "DELETE", path: "/api/x", origin: app}, token: true,
			want: "preflight: method DELETE not allowed", preflighted: true},
		{name: "put normalized, the route's own method", req: fetchRequest{method: "put", path: "/api/items/7", origin: app, headers: json}, token: true,
			status: 200, preflighted: true},
		{name: "the method's rule has no policy", req: fetchRequest{method: "DELETE", path: "/api/items/7", origin: app}, token: true,
			want: "preflight:", preflighted: true},
		{name: "preflight from an origin not allowed", req: fetchRequest{method: "PUT", path: "/api/items/7", origin: "https://evil.example.com"}, token: true,
			want: "preflight: no Access-Control-Allow-Origin", preflighted: true},
		{name: "credentials to a route without allow_credentials", req: fetchRequest{method: "GET", path: "/api/x", origin: app, include: true}, token: true,
			want: "preflight: credentials without", preflighted: true},
		{name: "credentials to a route without allow_credentials, simple", req: fetchRequest{method: "GET", path: "/api/x", origin: app, include: true},
			want: "credentials without"},
		{name: "credentials allowed", req: fetchRequest{method: "GET", path: "/cred/x", origin: app, include: true},
			status: 200},
		{name: "credentials allowed, with a token", req: fetchRequest{method: "GET", path: "/cred/x", origin: app, include: true}, token: true,
			status: 200, preflighted: true},
		{name: "credentials: another origin", req: fetchRequest{method: "GET", path: "/cred/x", origin: "https://evil.example.com", include: true},
			want: "no Access-Control-Allow-Origin"},
		{name: "credentials: no upstream header exposed", req: fetchRequest{method: "GET", path: "/cred/x", origin: app, include: true},
			status: 200, hidden: []string{"X-Total"}},
		{name: "any origin", req: fetchRequest{method: "GET", path: "/pub/x", origin: "https://anyone.test"},
			status: 200, readable: []string{"X-Total"}},
		{name: "any origin, null", req: fetchRequest{method: "GET", path: "/pub/x", origin: "null"},
			status: 200},
		{name: "any origin refuses credentials", req: fetchRequest{method: "GET", path: "/pub/x", origin: "https://anyone.test", include: true},
			want: "Access-Control-Allow-Origin * is not"},
		{name: "any header", req: fetchRequest{method: "GET", path: "/pub/x", origin: "https://anyone.test", headers: map[string]string{"X-Whatever": "1"}},
			status: 200, preflighted: true},
		{name: "any header is not Authorization", req: fetchRequest{method: "GET", path: "/pub/x", origin: "https://anyone.test"}, token: true,
			want: "preflight: authorization not allowed", preflighted: true},
		{name: "route without a policy keeps the upstream's headers", req: fetchRequest{method: "GET", path: "/plain/x", origin: "https://anyone.test"},
			status: 200, readable: []string{"X-Total"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok := ""
			if c.token {
				tok = token
			}
			before := upCount.Load()
			res := browserFetch(t, srv.URL, c.req, tok)
			if c.want != "" {
				if !strings.HasPrefix(res.networkError, c.want) {
					t.Fatalf("network error %q, want %q", res.networkError, c.want)
				}
			} else {
				if res.networkError != "" {
					t.Fatalf("network error %q, want a readable %d", res.networkError, c.status)
				}
				if res.status != c.status {
					t.Errorf("status %d, want %d", res.status, c.status)
				}
			}
			if res.preflighted != c.preflighted {
				t.Errorf("preflighted %v, want %v", res.preflighted, c.preflighted)
			}
			for _, h := range c.readable {
				if res.readable.Get(h) == "" {
					t.Errorf("the script cannot read %s (readable: %v)", h, res.readable)
				}
			}
			for _, h := range c.hidden {
				if res.readable.Get(h) != "" {
					t.Errorf("the script reads %s", h)
				}
			}
			// A preflight answered by the proxy never reaches the upstream.
			if c.preflighted && strings.HasPrefix(res.networkError, "preflight:") && upCount.Load() != before {
				t.Errorf("the upstream got %d requests for a refused preflight", upCount.Load()-before)
			}
		})
	}
}
