package idp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

const (
	clientSecret  = "s3cret-of-the-test-client"
	sessionSecret = "this is a session secret of 32+ bytes"
)

// flowEnv is an application with the /auth routes and a protected /me,
// served on loopback, next to an idptest provider.
type flowEnv struct {
	idp    *idptest.Server
	p      *idp.Plugin
	app    *httptest.Server
	base   string       // app URL
	client *http.Client // cookie jar, does not follow redirects
}

// newFlowEnv starts the provider (with opts), the application and a client.
func newFlowEnv(t testing.TB, opts idptest.Options, mutate func(*idp.Config)) *flowEnv {
	t.Helper()
	opts.Clients = append(opts.Clients, idptest.Client{ID: clientID, Secret: clientSecret})
	srv := idptest.NewServer(t, opts)
	mux := http.NewServeMux()
	app := httptest.NewUnstartedServer(mux)
	base := "http://" + app.Listener.Addr().String()
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = base + "/auth/callback"
		c.SessionSecret = []byte(sessionSecret)
		if mutate != nil {
			mutate(c)
		}
	})
	mux.Handle(p.Config().AuthPrefix+"/", p.Routes())
	mux.Handle("GET /me", p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		_, _ = io.WriteString(w, u.PreferredUsername)
	}))
	app.Start()
	t.Cleanup(app.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{
		Jar:           jar,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &flowEnv{idp: srv, p: p, app: app, base: base, client: c}
}

// get sends GET url with the jar and returns status, headers and body.
func (e *flowEnv) get(t testing.TB, u string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return e.do(t, req)
}

func (e *flowEnv) do(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

// post sends a JSON POST to the app path with extra headers (pairs).
func (e *flowEnv) post(t *testing.T, path, contentType, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return e.do(t, req)
}

// startLogin does GET /auth/login[?return_to] and returns the provider's
// authorization URL (the jar keeps the state cookie).
func (e *flowEnv) startLogin(t *testing.T, query string) *url.URL {
	t.Helper()
	resp := e.get(t, e.base+"/auth/login"+query)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("login: status %d: %s", resp.StatusCode, readBody(resp))
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// authorize follows the provider's authorization URL and returns the
// callback URL it redirects to.
func (e *flowEnv) authorize(t testing.TB, authURL *url.URL) string {
	t.Helper()
	resp := e.get(t, authURL.String())
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: status %d: %s", resp.StatusCode, readBody(resp))
	}
	return resp.Header.Get("Location")
}

// loginToCallback runs login and authorization and returns the callback
// URL, not yet visited.
func (e *flowEnv) loginToCallback(t *testing.T) string {
	t.Helper()
	return e.authorize(t, e.startLogin(t, ""))
}

// tokenDoc is the JSON document of callback and refresh.
type tokenDoc struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	ReturnTo     string `json:"return_to"`
}

func decodeDoc(t *testing.T, resp *http.Response) tokenDoc {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, readBody(resp))
	}
	for h, want := range map[string]string{"Cache-Control": "no-store", "Pragma": "no-cache", "Content-Type": "application/json"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	var d tokenDoc
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.AccessToken == "" || d.RefreshToken == "" || d.TokenType != "Bearer" || d.ExpiresIn <= 0 {
		t.Fatalf("incomplete token document: %+v", d)
	}
	return d
}

func readBody(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return string(b)
}

// wantProblem checks status, problem+json and that detail contains part.
func wantProblem(t *testing.T, resp *http.Response, status int, part string) {
	t.Helper()
	body := readBody(resp)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("content type %q, want problem+json", ct)
	}
	var d problem.Details
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if !strings.Contains(d.Detail, part) {
		t.Fatalf("detail %q does not contain %q", d.Detail, part)
	}
}

// cookieNamed returns the Set-Cookie of resp named name.
func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// verifyCtx is a short context for Verify calls in tests.
func verifyCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}
