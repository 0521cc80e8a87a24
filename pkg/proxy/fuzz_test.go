package proxy

import (
	"bufio"
	"context"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Seeds live in testdata/fuzz/<Target>/ as well.

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/", "/a/b/", "/%2e%2e/x", "/a%2Fb", "/a;b", "//x", "/caf%C3%A9", "/%252F", "/a\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		checkPathInvariants(t, p)
	})
}

// readRequest parses a request the way net/http's server does, or returns
// nil when the server would refuse it itself.
func readRequest(method, host, target string) *http.Request {
	raw := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return nil
	}
	return r
}

func FuzzRuleMatch(f *testing.F) {
	rs, err := compileRules(realisticRoutes, PolicyDeny, []string{"/favicon.ico"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("GET", "", "/health")
	f.Add("HEAD", "internal.example.com", "/x")
	f.Add("POST", "", "/admin")
	f.Add("GET", "", "/api/v1/items/a/b")
	f.Fuzz(func(t *testing.T, method, host, target string) {
		r := readRequest(method, host, target)
		if r == nil || checkPath(r.URL.EscapedPath()) != "" {
			return
		}
		got := rs.match(r)
		if got == nil {
			t.Fatal("no rule")
		}
		if again := rs.match(r); again != got {
			t.Fatal("matching is not deterministic")
		}
		if got.index >= 0 {
			// A method-specific rule only matches its method (GET: HEAD too).
			if m, _, ok := strings.Cut(got.pattern, " "); ok && m != r.Method && (m != "GET" || r.Method != "HEAD") {
				t.Fatalf("%s %s matched %q", r.Method, r.URL.Path, got.pattern)
			}
		}
	})
}

// countingTransport answers 200 in process and counts the requests that
// would have reached the upstream.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// FuzzProxy sends arbitrary requests through the whole handler, with a
// provider that never answers (protected routes are 503): no 5xx but 503,
// no panic, and nothing rejected reaches the upstream.
func FuzzProxy(f *testing.F) {
	cfg := testSetup{Config: DefaultConfig()}
	cfg.Upstream.URL = "http://upstream.invalid"
	cfg.IDP.ServerURL, cfg.IDP.Realm, cfg.IDP.ClientID = "http://127.0.0.1:1", "demo", "shortener"
	cfg.Routes = realisticRoutes
	ctx, cancel := context.WithCancel(context.Background())
	tr := &countingTransport{}
	plugin, err := idp.New(ctx, cfg.IDP)
	cancel() // no key fetches: every token check is ErrUnavailable
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = plugin.Close() })
	p, err := New(plugin, cfg.Config, Options{Transport: tr})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("GET", "/health", "X_Auth_Request_User", "x")
	f.Add("POST", "/shorten", "Authorization", "Bearer abc")
	f.Add("GET", "/%2e%2e/admin/", "Connection", "Upgrade")
	f.Fuzz(func(t *testing.T, method, target, hk, hv string) {
		r := readRequest(method, "proxy.test", target)
		if r == nil {
			return
		}
		r.Header[hk] = []string{hv}
		r.RemoteAddr = "192.0.2.1:1234"
		before := tr.n.Load()
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		forwarded := tr.n.Load() - before
		switch {
		case rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusBadGateway:
			t.Fatalf("%s %q: status %d", method, target, rec.Code)
		case rec.Code != 200 && forwarded != 0:
			t.Fatalf("%s %q: rejected with %d but forwarded", method, target, rec.Code)
		case checkPath(r.URL.EscapedPath()) != "" && forwarded != 0:
			t.Fatalf("%s %q: ambiguous path forwarded", method, target)
		}
	})
}
