package proxy

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// manyAppsSetup is testConfig with three apps chosen by host: a.test,
// b.test (no token forwarded, the user id under its own header), and
// api.test, whose /v2/ goes to a third upstream.
func manyAppsSetup(t *testing.T) (testSetup, *recordingUpstream, *recordingUpstream, *recordingUpstream) {
	t.Helper()
	a, b, v2 := newUpstream(t), newUpstream(t), newUpstream(t)
	s := testConfig(newProvider(t), "")
	no, userID := false, "X-User-Id"
	s.Upstreams = []UpstreamRoute{
		{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: a.URL}},
		{Match: "b.test/", UpstreamConfig: UpstreamConfig{URL: b.URL}, Headers: UpstreamHeaders{ForwardToken: &no, User: &userID}},
		{Match: "api.test/", UpstreamConfig: UpstreamConfig{URL: b.URL}},
		{Match: "api.test/v2/", UpstreamConfig: UpstreamConfig{URL: v2.URL}},
	}
	return s, a, b, v2
}

func hostGet(t *testing.T, base, host, target, token string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	h := map[string]string{"Host": host}
	for k, v := range hdr {
		h[k] = v
	}
	req, _ := http.NewRequest(http.MethodGet, base+target, nil)
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header[k] = []string{v}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// TestUpstreamsByHost: each host goes to its upstream with its own header
// settings; a host no upstream names is 421 and never forwarded, whatever
// X-Forwarded-Host says.
func TestUpstreamsByHost(t *testing.T) {
	s, a, b, v2 := manyAppsSetup(t)
	idpSrv := newProvider(t)
	s.IDP.ServerURL, s.IDP.Realm = idpSrv.URL, idpSrv.Realm
	_, px := startProxy(t, s, Options{}, true)
	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))

	if resp, body := hostGet(t, px.URL, "a.test", "/health", tok, map[string]string{"X-User-Id": "forged"}); resp.StatusCode != 200 {
		t.Fatalf("a.test: %d %s", resp.StatusCode, body)
	}
	got := a.last(t)
	if got.Header.Get("Authorization") != "Bearer "+tok || got.Header.Get("X-Auth-Request-Preferred-Username") != "alice" || got.Header.Get("X-User-Id") != "" {
		t.Errorf("a.test upstream headers: %v", got.Header)
	}
	if resp, body := hostGet(t, px.URL, "B.Test.", "/health", tok, map[string]string{"X-Auth-Request-User": "forged"}); resp.StatusCode != 200 {
		t.Fatalf("b.test: %d %s", resp.StatusCode, body)
	}
	got = b.last(t)
	if got.Header.Get("Authorization") != "" || got.Header.Get("X-User-Id") == "" || got.Header.Get("X-User-Id") == "forged" ||
		got.Header.Get("X-Auth-Request-User") != "" || got.Header.Get("X-Auth-Request-Preferred-Username") != "alice" {
		t.Errorf("b.test upstream headers (no token, X-User-Id, the client's X-Auth-Request-User stripped): %v", got.Header)
	}
	for target, want := range map[string]*recordingUpstream{"/v2/items": v2, "/v1/items": b, "/v2": b} {
		before := want.count()
		if resp, body := hostGet(t, px.URL, "api.test:8080", target, tok, nil); resp.StatusCode != 200 || want.count() != before+1 {
			t.Errorf("api.test%s: %d %s, not at the expected upstream", target, resp.StatusCode, body)
		}
	}
	n := a.count() + b.count() + v2.count()
	for _, c := range []struct{ host, xfh string }{
		{"unknown.test", ""}, {"evil.test", "a.test"}, {"a.test.evil.test", ""}, {"127.0.0.1", ""}, {"a.testx", ""},
	} {
		hdr := map[string]string{}
		if c.xfh != "" {
			hdr["X-Forwarded-Host"] = c.xfh
		}
		resp, body := hostGet(t, px.URL, c.host, "/health", tok, hdr)
		if resp.StatusCode != http.StatusMisdirectedRequest || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("host %q (X-Forwarded-Host %q): %d %s, want 421 problem+json", c.host, c.xfh, resp.StatusCode, body)
		}
	}
	// X-Forwarded-Host does not move a request to another upstream.
	hostGet(t, px.URL, "a.test", "/health", "", map[string]string{"X-Forwarded-Host": "b.test"})
	if a.count()+b.count()+v2.count() != n+1 || a.last(t).Host == "" {
		t.Errorf("X-Forwarded-Host moved the request")
	}
	// An absolute request-URI names the host (RFC 9112 §3.2.2): it
	// chooses the upstream and the rules, whatever the Host header says.
	addr := strings.TrimPrefix(px.URL, "http://")
	before := b.count()
	if st := rawStatus(t, addr, "GET http://b.test/health HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"); st != 200 || b.count() != before+1 {
		t.Errorf("absolute URI to b.test with Host a.test: %d, b.test's upstream %d -> %d", st, before, b.count())
	}
	if st := rawStatus(t, addr, "GET http://unknown.test/health HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"); st != http.StatusMisdirectedRequest {
		t.Errorf("absolute URI to an unknown host with Host a.test: %d, want 421", st)
	}
	if n2 := a.count() + b.count() + v2.count(); n2 != n+2 {
		t.Errorf("upstream requests: %d, want %d", n2, n+2)
	}
}

// TestPathConfusionPerUpstream reruns the path-confusion cases on every
// upstream: each is refused before any rule or upstream is chosen.
func TestPathConfusionPerUpstream(t *testing.T) {
	s, a, b, v2 := manyAppsSetup(t)
	_, px := startProxy(t, s, Options{}, true)
	for _, host := range []string{"a.test", "b.test", "api.test"} {
		for _, target := range []string{
			"/health/../admin/users", "/./admin/", "//admin/", "/admin%2Fusers", "/health%2F..%2Fadmin",
			"/abc;jsessionid=x", "/%2e%2e/admin/", "/admin%5cusers", "/abc%252F", "/static/%C0%AE%C0%AE/admin/",
			"/v2/..%2Fadmin", "/v2/%2e%2e/admin", "/v2//admin",
		} {
			resp, body := hostGet(t, px.URL, host, target, "", nil)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != problem.ContentType {
				t.Errorf("%s%s: %d %s, want 400 problem+json", host, target, resp.StatusCode, body)
			}
		}
	}
	if n := a.count() + b.count() + v2.count(); n != 0 {
		t.Fatalf("rejected requests reached an upstream: %d", n)
	}
}

// TestUpstreamsRefused: the configuration errors of upstreams.
func TestUpstreamsRefused(t *testing.T) {
	srv := newProvider(t)
	for _, c := range []struct {
		name string
		ups  []UpstreamRoute
		url  string
		want string
	}{
		{"with upstream.url", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "http://127.0.0.1:2", "exclusive"},
		{"no host", []UpstreamRoute{{Match: "/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "must name a host"},
		{"no path", []UpstreamRoute{{Match: "a.test", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "want a.test/"},
		{"method", []UpstreamRoute{{Match: "GET a.test/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "without a method"},
		{"port", []UpstreamRoute{{Match: "a.test:8080/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "port"},
		{"trailing dot", []UpstreamRoute{{Match: "a.test./", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "trailing dot"},
		{"wildcard", []UpstreamRoute{{Match: "*.test/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "exact names"},
		{"dot path", []UpstreamRoute{{Match: "a.test/x/../y/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}, "", "path"},
		{"no url", []UpstreamRoute{{Match: "a.test/"}}, "", "Upstreams[0]: URL is required"},
		{"bad url", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "ftp://x"}}}, "", "Upstreams[0].URL"},
		{"negative timeout", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x", Timeout: -1}}}, "", "Upstreams[0].Timeout"},
		{"duplicate", []UpstreamRoute{
			{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x"}},
			{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://y"}},
		}, "", "Upstreams[1]: Match \"a.test/\": Upstreams[0] has the same pattern"},
		{"duplicate in another case", []UpstreamRoute{
			{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x"}},
			{Match: "A.Test/", UpstreamConfig: UpstreamConfig{URL: "http://y"}},
		}, "", "Upstreams[1]: Match \"A.Test/\": Upstreams[0] has the same pattern"},
		{"h2 without TLS", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x", Protocol: ProtocolH2}}}, "", "Upstreams[0].Protocol h2 is HTTP/2 over TLS"},
		{"h2c over TLS", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "https://x", Protocol: ProtocolH2C}}}, "", "Upstreams[0].Protocol h2c is HTTP/2 without TLS"},
		{"unknown protocol", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x", Protocol: "spdy"}}}, "", `Upstreams[0].Protocol "spdy"`},
		{"negative stream timeout", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x", StreamTimeout: -1}}}, "", "Upstreams[0].StreamTimeout"},
		{"reserved header", []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x"}, Headers: UpstreamHeaders{Email: ptr("Authorization")}}}, "", "Upstreams[0].Headers.Email"},
	} {
		s := testConfig(srv, c.url)
		s.Upstreams = c.ups
		_, err := Compile(s.Config, s.IDP)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestHostNamesInAnyCase: host names are case-insensitive wherever the
// configuration names one: an upstream's match, a rule's pattern and an
// allowed_redirect_hosts entry written in capitals are accepted and
// compared in lower case, as the request's host is.
func TestHostNamesInAnyCase(t *testing.T) {
	s, a, _, v2 := manyAppsSetup(t)
	s.Upstreams[0].Match = "A.Test/"
	s.Upstreams[3].Match = "API.test/v2/"
	s.Routes = append([]RouteConfig{{Match: "GET A.TEST/admin/", Roles: []string{"admin"}}}, s.Routes...)
	s.IDP.IncludeRoutes, s.IDP.ClientSecret = true, "s"
	s.IDP.RedirectURI, s.IDP.SessionSecret = "http://login.test/auth/callback", []byte("a session secret of 32 bytes or more")
	s.IDP.AllowedRedirectHosts = []string{"A.Test"}
	idpSrv := newProvider(t)
	s.IDP.ServerURL, s.IDP.Realm = idpSrv.URL, idpSrv.Realm
	_, px := startProxy(t, s, Options{}, true)
	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	if resp, body := hostGet(t, px.URL, "a.test", "/health", tok, nil); resp.StatusCode != 200 || a.last(t).Path != "/health" {
		t.Fatalf("a.test (upstream A.Test/): %d %s", resp.StatusCode, body)
	}
	if resp, body := hostGet(t, px.URL, "api.test", "/v2/x", tok, nil); resp.StatusCode != 200 || v2.last(t).Path != "/v2/x" {
		t.Fatalf("api.test/v2/ (upstream API.test/v2/): %d %s", resp.StatusCode, body)
	}
	if resp, body := hostGet(t, px.URL, "A.test", "/admin/x", tok, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a.test/admin/ without the role (rule GET A.TEST/admin/): %d %s", resp.StatusCode, body)
	}
	resp, body := hostGet(t, px.URL, "login.test", "/auth/login?rd="+url.QueryEscape("http://a.test/page"), "", nil)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("login with rd on a.test (allowed_redirect_hosts A.Test): %d %s", resp.StatusCode, body)
	}
}

func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// FuzzUpstreamPick: whatever the pattern and the request, compiling never
// panics, and an upstream is chosen only for a request whose host (port
// and case aside, as serve canonicalises it, and the pattern's host is
// compiled) is the one its pattern names.
func FuzzUpstreamPick(f *testing.F) {
	for _, s := range [][2]string{
		{"a.test/", "a.test"}, {"a.test/v2/", "a.test:8080"}, {"A.test/", "a.test"}, {"a.test./", "a.test."},
		{"/", "evil.test"}, {"a.test/{x}/", "a.test"}, {"[::1]/", "[::1]:80"}, {"a.test/x/../y/", "a.test"},
		{"a.test/", "a.test.evil.test"}, {"a.test/", "evil.test:a.test"},
	} {
		f.Add(s[0], s[1], "/v2/x")
	}
	f.Fuzz(func(t *testing.T, pattern, host, path string) {
		cfg := DefaultConfig()
		cfg.Upstreams = []UpstreamRoute{{Match: pattern, UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1"}}}
		s, err := compileUpstreams(cfg.withDefaults())
		if err != nil {
			return
		}
		r, err := http.NewRequest(http.MethodGet, "http://x"+path, nil)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		r.Host = canonicalHost(host)
		up := s.pick(r)
		if up == nil {
			return
		}
		name, _, _ := strings.Cut(pattern, "/")
		h := r.Host
		if i := strings.LastIndexByte(h, ':'); i >= 0 && i > strings.LastIndexByte(h, ']') {
			h = h[:i]
		}
		if h != strings.ToLower(name) { // host names are case-insensitive
			t.Fatalf("pattern %q chose an upstream for host %q (request host %q)", pattern, host, r.Host)
		}
	})
}
