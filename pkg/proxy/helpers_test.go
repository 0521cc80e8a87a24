package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// seen is what the test upstream received.
type seen struct {
	Method, Path, RawPath, RequestURI, Host string
	Header                                  http.Header
	Body                                    string
}

// recordingUpstream answers 200 "ok" and records every request it gets.
type recordingUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{r.Method, r.URL.Path, r.URL.RawPath, r.RequestURI, r.Host, r.Header.Clone(), string(body)})
		u.mu.Unlock()
		w.Header().Set("X-Request-Id", "upstream-own-id")
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *recordingUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *recordingUpstream) last(t *testing.T) seen {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return u.reqs[len(u.reqs)-1]
}

var (
	svcReporter = idptest.Client{ID: "svc-reporter", Secret: "reporter-secret", RealmRoles: []string{"creator"}, ServiceAccount: true}
	svcOther    = idptest.Client{ID: "svc-other", Secret: "other-secret", RealmRoles: []string{"creator"}, ServiceAccount: true}
)

func newProvider(t testing.TB) *idptest.Server {
	return idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{svcReporter, svcOther}})
}

// testSetup is a proxy configuration with the plugin configuration it
// runs with.
type testSetup struct {
	Config
	IDP idp.Config
}

// testConfig protects upstreamURL with the realistic rules and the
// provider srv.
func testConfig(srv *idptest.Server, upstreamURL string) testSetup {
	c := testSetup{Config: DefaultConfig()}
	c.Upstream.URL = upstreamURL
	c.IDP.ServerURL, c.IDP.Realm, c.IDP.ClientID = srv.URL, srv.Realm, "shortener"
	c.IDP.OptionalAudiences = []string{"svc-reporter"}
	c.Routes = realisticRoutes
	return c
}

// newProxy builds the plugin of s (closed with t) and a Proxy over it.
func newProxy(t testing.TB, s testSetup, o Options) (*Proxy, error) {
	t.Helper()
	plugin, err := idp.New(t.Context(), s.IDP)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = plugin.Close() })
	return New(plugin, s.Config, o)
}

// startProxy serves a Proxy for cfg on 127.0.0.1 and waits for the
// provider's keys unless wait is false.
func startProxy(t *testing.T, cfg testSetup, o Options, wait bool) (*Proxy, *httptest.Server) {
	t.Helper()
	p, err := newProxy(t, cfg, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if wait {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := p.Plugin().WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

// do sends a request to base+target with the bearer token (if any) and
// headers, and returns the status and body.
func do(t *testing.T, method, url, token string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header[k] = []string{v} // as written: no canonicalisation
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
