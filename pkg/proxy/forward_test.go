package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCookieTokenLocation(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.IDP.TokenLocation = "cookie"
	cfg.IDP.CookieName = "at"
	_, px := startProxy(t, cfg, Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))

	resp, body := do(t, "POST", px.URL+"/shorten", "", map[string]string{"Cookie": "theme=dark; at=" + alice + "; lang=en"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("cookie token: %d %s", resp.StatusCode, body)
	}
	got := up.last(t).Header
	if got.Get("Cookie") != "theme=dark; lang=en" {
		t.Errorf("Cookie forwarded as %q, want the token cookie removed", got.Get("Cookie"))
	}
	if got.Get("Authorization") != "Bearer "+alice || got.Get("X-Auth-Request-User") != "user-alice" {
		t.Errorf("identity not forwarded: %v", got)
	}
	// A bearer header is not a cookie: no token in COOKIE mode.
	if resp, _ := do(t, "POST", px.URL+"/shorten", alice, nil, ""); resp.StatusCode != 401 {
		t.Errorf("header token in cookie mode: %d", resp.StatusCode)
	}
	// Public route with a bad cookie: forwarded anonymously, cookie gone.
	resp, _ = do(t, "GET", px.URL+"/health", "", map[string]string{"Cookie": "at=forged"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).Header; got.Get("Cookie") != "" || got.Get("Authorization") != "" {
		t.Errorf("forged cookie forwarded: %v", got)
	}
	// Whitespace around the name: net/http reads "at =x" as the cookie
	// "at", and so do most upstreams; it must not reach them unverified.
	for _, c := range []string{"at =forged; lang=en", "lang=en; at\t=forged", "lang=en;  at  = forged"} {
		resp, _ = do(t, "GET", px.URL+"/health", "", map[string]string{"Cookie": c}, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%q: status %d", c, resp.StatusCode)
		}
		if got := up.last(t).Header; got.Get("Cookie") != "lang=en" || got.Get("Authorization") != "" {
			t.Errorf("Cookie %q forwarded as %q (Authorization %q), want lang=en only", c, got.Get("Cookie"), got.Get("Authorization"))
		}
	}
	resp, body = do(t, "POST", px.URL+"/shorten", "", map[string]string{"Cookie": "at =" + alice + "; lang=en"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("cookie token with a spaced name: %d %s", resp.StatusCode, body)
	}
	if got := up.last(t).Header.Get("Cookie"); got != "lang=en" {
		t.Errorf("verified token cookie with a spaced name forwarded as Cookie %q", got)
	}
}

func TestStripCookie(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"a=1; at=x; b=2"}, []string{"a=1; b=2"}},
		{[]string{"at=x"}, nil},
		{[]string{"a=1", "at=x"}, []string{"a=1"}},
		{[]string{"flat=1; at=2"}, []string{"flat=1"}},
		{[]string{"flat=1; xat=2"}, []string{"flat=1; xat=2"}},
		{[]string{"a=1;at=x;at=y"}, []string{"a=1"}},
		// Spellings net/http reads as the cookie "at" (TestCookieTokenLocation).
		{[]string{"a=1; at =x"}, []string{"a=1"}},
		{[]string{"at\t=x; b=2"}, []string{"b=2"}},
		{[]string{"a=1;  at  =  x ;b=2"}, []string{"a=1; b=2"}},
	}
	for _, tt := range tests {
		h := http.Header{"Cookie": append([]string(nil), tt.in...)}
		stripCookie(h, "at")
		if got := h["Cookie"]; strings.Join(got, "|") != strings.Join(tt.want, "|") || (tt.want == nil && got != nil) {
			t.Errorf("stripCookie(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRulesUnderAuthPrefixAreErrors(t *testing.T) {
	c := testSetup{Config: DefaultConfig()}
	c.Upstream.URL = "http://127.0.0.1:8000"
	c.IDP.ServerURL, c.IDP.Realm, c.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	c.IDP.IncludeRoutes = true
	c.IDP.RedirectURI = "http://127.0.0.1:4180/auth/callback"
	c.IDP.SessionSecret = []byte(strings.Repeat("s", 32))
	c.Routes = []RouteConfig{{Match: "GET /auth/login", Public: true}, {Match: "/authors/", Public: true}}
	c.IDP.ExcludedPaths = []string{"/auth/refresh"}
	_, err := Compile(c.Config, c.IDP)
	if err == nil || !strings.Contains(err.Error(), `Routes[0] "GET /auth/login" lies under IDP.AuthPrefix`) ||
		!strings.Contains(err.Error(), `"/auth/refresh" lies under`) || strings.Contains(err.Error(), "/authors/") {
		t.Fatalf("err = %v", err)
	}
	c.IDP.IncludeRoutes = false
	if _, err := Compile(c.Config, c.IDP); err != nil {
		t.Fatalf("without include_routes the prefix is the upstream's: %v", err)
	}
}

// TestWebSocketUpgrade checks that a WebSocket upgrade is tunnelled (the
// proxy's response writer can be hijacked through its wrapper) and that
// the rules applied to the upgrade request.
func TestWebSocketUpgrade(t *testing.T) {
	idpSrv := newProvider(t)
	ws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want websocket", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Seen-User: " + r.Header.Get("X-Auth-Request-User") + "\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString("echo " + line)
		_ = brw.Flush()
	}))
	t.Cleanup(ws.Close)
	_, px := startProxy(t, testConfig(idpSrv, ws.URL), Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice"))

	dial := func(token string) (*http.Response, net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(px.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		req := "GET /ws/socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
		if token != "" {
			req += "Authorization: Bearer " + token + "\r\n"
		}
		if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp, conn, br
	}
	if resp, _, _ := dial(""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("upgrade without a token: %d", resp.StatusCode)
	}
	resp, conn, br := dial(alice)
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("X-Seen-User") != "user-alice" {
		t.Fatalf("upgrade: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := io.WriteString(conn, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "echo hello\n" {
		t.Fatalf("tunnel: %q %v", line, err)
	}
}
