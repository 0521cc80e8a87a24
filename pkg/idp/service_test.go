package idp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

var reporter = idptest.Client{ID: "svc-reporter", Secret: "reporter-secret", RealmRoles: []string{"reader"}, ServiceAccount: true}

// TestClientCredentials: the service token is obtained once, reused, and
// accepted by a service that lists the client as an optional audience.
func TestClientCredentials(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{reporter}})
	svc := newPlugin(t, srv, func(c *idp.Config) { c.ClientID, c.ClientSecret = reporter.ID, reporter.Secret })
	api := newPlugin(t, srv, func(c *idp.Config) { c.OptionalAudiences = []string{reporter.ID} })

	ts := svc.ClientCredentials(t.Context())
	before := srv.TokenRequests()
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	tok2, err := ts.Token()
	if err != nil || tok2.AccessToken != tok.AccessToken {
		t.Fatalf("second Token: %v, reused %v", err, tok2.AccessToken == tok.AccessToken)
	}
	if n := srv.TokenRequests() - before; n != 1 {
		t.Fatalf("%d token requests, want 1 (reuse)", n)
	}
	tp, err := api.Verify(verifyCtx(t), tok.AccessToken)
	if err != nil {
		t.Fatalf("service token refused: %v", err)
	}
	if tp.PreferredUsername != "service-account-svc-reporter" || tp.AuthorizedParty != reporter.ID {
		t.Fatalf("claims: %q %q", tp.PreferredUsername, tp.AuthorizedParty)
	}
}

func TestClientCredentialsErrors(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{reporter}})
	wrong := newPlugin(t, srv, func(c *idp.Config) { c.ClientID, c.ClientSecret = reporter.ID, "wrong" })
	_, err := wrong.ClientCredentials(t.Context()).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
		t.Fatalf("wrong secret: %v", err)
	}
	none := newPlugin(t, srv, func(c *idp.Config) { c.ClientID = reporter.ID })
	if _, err := none.ClientCredentials(t.Context()).Token(); !errors.Is(err, idp.ErrConfig) {
		t.Fatalf("no secret: %v, want ErrConfig", err)
	}
}

// TestClientCredentialsWire: before discovery, the Keycloak token path is
// used, with the credentials form-encoded in the body (no Basic auth).
func TestClientCredentialsWire(t *testing.T) {
	var mu sync.Mutex
	var got url.Values
	var auth, ctype, path string
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // discovery fails: the plugin never becomes ready
			return
		}
		_ = r.ParseForm()
		mu.Lock()
		got, auth, ctype, path = r.PostForm, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.URL.Path
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"svc-token","token_type":"Bearer","expires_in":300}`)
	}))
	defer tokenSrv.Close()
	p, err := idp.New(t.Context(), idp.Config{ServerURL: tokenSrv.URL, Realm: "demo", ClientID: "svc", ClientSecret: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tok, err := p.ClientCredentials(t.Context(), "reports").Token()
	if err != nil || tok.AccessToken != "svc-token" {
		t.Fatalf("Token: %v %v", tok, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if path != "/realms/demo/protocol/openid-connect/token" || auth != "" || ctype != "application/x-www-form-urlencoded" {
		t.Fatalf("path %q, Authorization %q, Content-Type %q", path, auth, ctype)
	}
	want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"svc"}, "client_secret": {"pw"}, "scope": {"reports"}}
	for k, v := range want {
		if got.Get(k) != v[0] {
			t.Errorf("form %s = %q, want %q", k, got.Get(k), v[0])
		}
	}
}

// recordingTransport records the requests it is given, then performs them.
type recordingTransport struct {
	mu   sync.Mutex
	auth []string
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.auth = append(rt.auth, r.Header.Get("Authorization"))
	rt.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestForwardToken: the caller's token goes to the downstream API; it is
// never overwritten, never sent over plain http to a remote host, never
// carried across a redirect to another host.
func TestForwardToken(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	var seen sync.Map // path -> Authorization seen downstream
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.Path, r.Header.Get("Authorization"))
		if r.URL.Path == "/redirect" {
			// Same server under another host name: a cross-host redirect.
			u, _ := url.Parse("http://" + r.Host)
			http.Redirect(w, r, "http://localhost:"+u.Port()+"/landed", http.StatusFound)
		}
	}))
	defer downstream.Close()
	token := srv.Mint(srv.UserClaims(clientID, "alice"))

	type result struct {
		err  error
		orig string
	}
	call := func(t *testing.T, fw *idp.TokenForwarder, target, preset string) result {
		t.Helper()
		var res result
		h := p.WithRawToken(func(w http.ResponseWriter, r *http.Request, _ string) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, target, nil)
			if preset != "" {
				req.Header.Set("Authorization", preset)
			}
			resp, err := (&http.Client{Transport: fw}).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			res = result{err: err, orig: req.Header.Get("Authorization")}
		})
		rec := httptest.NewRecorder()
		in := httptest.NewRequest(http.MethodGet, "/", nil)
		in.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(rec, in)
		if rec.Code != 200 {
			t.Fatalf("inbound request refused: %d", rec.Code)
		}
		return res
	}
	load := func(path string) string { v, _ := seen.Load(path); s, _ := v.(string); return s }

	if r := call(t, &idp.TokenForwarder{}, downstream.URL+"/plain", ""); r.err != nil || load("/plain") != "Bearer "+token || r.orig != "" {
		t.Fatalf("forward: err %v, downstream saw %q, caller's request changed to %q", r.err, load("/plain"), r.orig)
	}
	if r := call(t, &idp.TokenForwarder{}, downstream.URL+"/preset", "Basic eDp5"); r.err != nil || load("/preset") != "Basic eDp5" {
		t.Fatalf("existing Authorization overwritten: %q", load("/preset"))
	}
	if r := call(t, &idp.TokenForwarder{}, downstream.URL+"/redirect", ""); r.err != nil || load("/redirect") == "" || load("/landed") != "" {
		t.Fatalf("redirect: err %v, first %q, other host saw %q", r.err, load("/redirect"), load("/landed"))
	}
	rt := &recordingTransport{}
	r := call(t, &idp.TokenForwarder{Base: rt}, "http://reports.invalid/x", "")
	if !errors.Is(r.err, idp.ErrInsecureTransport) || len(rt.auth) != 0 {
		t.Fatalf("plain http to a remote host: %v, %d requests sent", r.err, len(rt.auth))
	}
	r = call(t, &idp.TokenForwarder{Base: rt, AllowHTTP: true}, "http://reports.invalid/x", "")
	if r.err == nil || errors.Is(r.err, idp.ErrInsecureTransport) || len(rt.auth) != 1 || rt.auth[0] != "Bearer "+token {
		t.Fatalf("AllowHTTP: %v, sent %q", r.err, rt.auth)
	}

	// No identity in the context: the request goes out untouched.
	req, _ := http.NewRequest(http.MethodGet, downstream.URL+"/anon", nil)
	resp, err := (&http.Client{Transport: idp.ForwardToken(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v, ok := seen.Load("/anon"); !ok || v != "" {
		t.Fatalf("anonymous request: seen %v %q", ok, v)
	}
	if !strings.HasPrefix(downstream.URL, "http://127.0.0.1") {
		t.Fatal("test assumes a loopback downstream")
	}
}
