package proxy

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestCORSHeaders checks the headers of a route's answers that the Fetch
// client of cors_fetch_test.go does not look at: Vary for caches, the
// preflight's cache lifetime, and that a preflight costs the upstream
// nothing and needs no token.
func TestCORSHeaders(t *testing.T) {
	idpSrv := newProvider(t)
	up, upCount := corsUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.Routes = corsRoutes
	_, srv := startProxy(t, cfg, Options{}, true)
	token := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	const app = "https://app.example.com"

	t.Run("preflight", func(t *testing.T) {
		before := upCount.Load()
		resp, body := do(t, http.MethodOptions, srv.URL+"/api/x", "", map[string]string{
			"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}, "")
		if resp.StatusCode != http.StatusNoContent || body != "" {
			t.Fatalf("preflight: %d %q, want 204 without a body", resp.StatusCode, body)
		}
		want := map[string]string{
			"Access-Control-Allow-Origin":  app,
			"Access-Control-Allow-Methods": "GET, POST, PATCH",
			"Access-Control-Allow-Headers": "AUTHORIZATION, content-type, X-Trace-Id",
			"Access-Control-Max-Age":       "600",
			"Vary":                         "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
		}
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %q, want %q", k, got, v)
			}
		}
		if got := resp.Header.Get("Access-Control-Allow-Credentials"); got != "" {
			t.Errorf("Access-Control-Allow-Credentials %q on a route without credentials", got)
		}
		if upCount.Load() != before {
			t.Error("the preflight reached the upstream")
		}
	})
	t.Run("preflight from another origin", func(t *testing.T) {
		resp, _ := do(t, http.MethodOptions, srv.URL+"/api/x", "", map[string]string{
			"Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"}, "")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Fatalf("preflight from another origin: %d %v, want 403 without CORS headers", resp.StatusCode, resp.Header)
		}
		if !strings.Contains(resp.Header.Get("Vary"), "Origin") {
			t.Errorf("Vary %q, want Origin", resp.Header.Get("Vary"))
		}
	})
	t.Run("forwarded answer", func(t *testing.T) {
		resp, _ := do(t, http.MethodGet, srv.URL+"/api/x", token, map[string]string{"Origin": app}, "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if got := resp.Header.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != app {
			t.Errorf("Access-Control-Allow-Origin %q, want only %q (the upstream's replaced)", got, app)
		}
		if got := resp.Header.Values("Access-Control-Expose-Headers"); len(got) != 1 || got[0] != "X-Total" {
			t.Errorf("Access-Control-Expose-Headers %q, want only X-Total", got)
		}
		if got := resp.Header.Get("Access-Control-Allow-Credentials"); got != "" {
			t.Errorf("the upstream's Access-Control-Allow-Credentials %q passed", got)
		}
		vary := strings.Join(resp.Header.Values("Vary"), ", ")
		if !strings.Contains(vary, "Origin") || !strings.Contains(vary, "Accept-Encoding") {
			t.Errorf("Vary %q, want Origin and the upstream's Accept-Encoding", vary)
		}
	})
	t.Run("gRPC-web call", func(t *testing.T) {
		resp, _ := do(t, http.MethodPost, srv.URL+"/api/pkg.Service/Method", token, map[string]string{
			"Origin": app, "Content-Type": "application/grpc-web+proto"}, "\x00\x00\x00\x00\x00")
		if got := resp.Header.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != app {
			t.Errorf("gRPC-web: Access-Control-Allow-Origin %q, want only %q (the upstream's replaced)", got, app)
		}
	})
	t.Run("no Origin", func(t *testing.T) {
		resp, _ := do(t, http.MethodGet, srv.URL+"/api/x", token, nil, "")
		if resp.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Origin") {
			t.Errorf("without Origin: ACAO %q, Vary %q; want none and Origin", resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Values("Vary"))
		}
	})
	t.Run("two Origin headers", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/x", nil)
		req.Header["Origin"] = []string{app, app}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("two Origin headers: ACAO %q, want none", got)
		}
	})
	t.Run("forbidden refusal", func(t *testing.T) {
		cfg := testConfig(idpSrv, up.URL)
		cfg.Routes = []RouteConfig{{Match: "/admin/", Roles: []string{"admin"}, CORS: CORSConfig{AllowedOrigins: []string{app}, AllowCredentials: true}}}
		_, srv := startProxy(t, cfg, Options{}, true)
		resp, _ := do(t, http.MethodGet, srv.URL+"/admin/x", token, map[string]string{"Origin": app}, "")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != app ||
			resp.Header.Get("Access-Control-Allow-Credentials") != "true" || resp.Header.Get("Access-Control-Expose-Headers") != "WWW-Authenticate" {
			t.Errorf("403 of a CORS route: %d %v, want the CORS headers", resp.StatusCode, resp.Header)
		}
	})
}

// TestCORSPreflightDefault checks skip_auth_preflight as the default of
// the routes without a policy, and that a route's policy wins over it.
func TestCORSPreflightDefault(t *testing.T) {
	idpSrv := newProvider(t)
	up, upCount := corsUpstream(t)
	pre := map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "PUT"}
	for _, skip := range []bool{false, true} {
		cfg := testConfig(idpSrv, up.URL)
		cfg.Routes = corsRoutes
		cfg.SkipAuthPreflight = skip
		_, srv := startProxy(t, cfg, Options{}, true)

		before := upCount.Load()
		resp, _ := do(t, http.MethodOptions, srv.URL+"/api/items/7", "", pre, "")
		if resp.StatusCode != http.StatusNoContent || upCount.Load() != before {
			t.Errorf("skip_auth_preflight %v, route with a policy: %d, upstream called %d times; want 204 from the proxy", skip, resp.StatusCode, upCount.Load()-before)
		}
		resp, _ = do(t, http.MethodOptions, srv.URL+"/other", "", pre, "")
		switch {
		case skip && (resp.StatusCode != 200 || upCount.Load() != before+1):
			t.Errorf("skip_auth_preflight on, route without a policy: %d; want the upstream's 200", resp.StatusCode)
		case !skip && resp.StatusCode != http.StatusUnauthorized:
			t.Errorf("skip_auth_preflight off, route without a policy: %d; want 401", resp.StatusCode)
		}
	}
}

func TestCORSConfigErrors(t *testing.T) {
	cases := []struct {
		name  string
		route RouteConfig
		key   string
		want  string
	}{
		{"star with credentials", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"*"}, AllowCredentials: true}},
			"Routes[0].CORS.AllowedOrigins[0]", `"*" with AllowCredentials`},
		{"star and others", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example", "*"}}},
			"Routes[0].CORS.AllowedOrigins[1]", "list no others"},
		{"null", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"null"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "null origin"},
		{"path", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example/"}}},
			"Routes[0].CORS.AllowedOrigins[0]", `write "https://a.example"`},
		{"no scheme", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"a.example"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "want scheme://host"},
		{"other scheme", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"ftp://a.example"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "want scheme://host"},
		{"star over a top-level domain", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://*.com"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "two labels or more"},
		{"star inside", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.*.example.com"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "leftmost labels"},
		{"star in a label", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://app-*.example.com"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "leftmost labels"},
		{"bad port", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example:99999"}}},
			"Routes[0].CORS.AllowedOrigins[0]", "not a TCP port"},
		{"twice", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example", "https://A.example:443"}}},
			"Routes[0].CORS.AllowedOrigins[1]", "listed twice"},
		{"no origins", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowCredentials: true}},
			"Routes[0].CORS", "AllowedOrigins is required"},
		{"lower-case method", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, AllowedMethods: []string{"patch"}}},
			"Routes[0].CORS.AllowedMethods", "upper-case"},
		{"method the pattern never matches", RouteConfig{Match: "PUT /a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, AllowedMethods: []string{"DELETE"}}},
			"Routes[0].CORS.AllowedMethods", "never judged by this route"},
		{"star method", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, AllowedMethods: []string{"*"}}},
			"Routes[0].CORS.AllowedMethods", "list the methods"},
		{"bad header", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, AllowedHeaders: []string{"X Bad"}}},
			"Routes[0].CORS.AllowedHeaders", "not a header name"},
		{"exposed star with credentials", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, ExposedHeaders: []string{"*"}, AllowCredentials: true}},
			"Routes[0].CORS.ExposedHeaders", "list the headers"},
		{"negative max_age", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, MaxAge: -1e9}},
			"Routes[0].CORS.MaxAge", "negative"},
		{"fractional max_age", RouteConfig{Match: "/a/", CORS: CORSConfig{AllowedOrigins: []string{"https://a.example"}, MaxAge: 1500e6}},
			"Routes[0].CORS.MaxAge", "whole seconds"},
	}
	srv := newProvider(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(srv, "http://127.0.0.1:1")
			cfg.Routes = []RouteConfig{c.route}
			_, err := Compile(cfg.Config, cfg.IDP)
			var ke *FieldError
			if !errors.As(err, &ke) {
				t.Fatalf("Compile: %v, want a *FieldError", err)
			}
			if ke.Field != c.key || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Compile: %v (key %s), want key %s and %q", err, ke.Field, c.key, c.want)
			}
		})
	}
}

func TestCORSOriginsAccepted(t *testing.T) {
	for _, c := range []struct{ in, exact string }{
		{"https://App.Example.com", "https://app.example.com"},
		{"https://app.example.com:443", "https://app.example.com"},
		{"http://127.0.0.1:80", "http://127.0.0.1"},
		{"http://[::1]:5173", "http://[::1]:5173"},
		{"http://localhost:3000", "http://localhost:3000"},
	} {
		got, pat, err := parseOrigin(c.in)
		if err != nil || pat != nil || got != c.exact {
			t.Errorf("parseOrigin(%q) = %q, %v, %v; want %q", c.in, got, pat, err, c.exact)
		}
	}
	_, pat, err := parseOrigin("https://*.example.com:8443")
	if err != nil || pat == nil || !pat.matches("https://a.example.com:8443") || pat.matches("https://a.example.com") || pat.matches("https://a.example.com:84430") {
		t.Errorf("pattern with a port: %v %v", pat, err)
	}
}

// TestCORSTable checks that check-config's rule table shows a route's
// policy.
func TestCORSTable(t *testing.T) {
	rs, err := compileRules(corsRoutes, PolicyAuthenticated, nil)
	if err != nil {
		t.Fatal(err)
	}
	table := rs.table("")
	for _, want := range []string{
		"authenticated + CORS from https://app.example.com, https://*.example.org, http://127.0.0.1:5173\n",
		"public + CORS from https://app.example.com with credentials\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}

// FuzzCORSOrigin checks, for any Origin value, that a policy of one exact
// origin and one pattern allows only that origin and the origins that a
// URL parser reads as a subdomain of the pattern's domain, over its
// scheme, without a port, path, user info or anything else.
func FuzzCORSOrigin(f *testing.F) {
	for _, s := range []string{"https://app.example.com", "https://a.example.org", "https://a.b.example.org",
		"https://example.org", "https://evil.com/.example.org", "https://a@b.example.org", "https://a.example.org:443",
		"https://A.example.org", "https://a..example.org", "https://-a.example.org", "null", "https://a.example.org#",
		"http://a.example.org", "https://a.example.org/", "https://a.example.org?", "https://[::1].example.org"} {
		f.Add(s)
	}
	p, err := compileCORS(0, "/api/", CORSConfig{AllowedOrigins: []string{"https://app.example.com", "https://*.example.org"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		if !p.allows(origin) || origin == "https://app.example.com" {
			return
		}
		u, err := url.Parse(origin)
		if err != nil || u.Scheme != "https" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery ||
			u.Fragment != "" || u.Port() != "" || u.Opaque != "" || "https://"+u.Host != origin ||
			!strings.HasSuffix(u.Host, ".example.org") || u.Host != strings.ToLower(u.Host) ||
			strings.Contains(u.Host, "..") || strings.HasPrefix(u.Host, ".") {
			t.Fatalf("%q allowed by https://*.example.org", origin)
		}
	})
}
