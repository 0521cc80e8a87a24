package interop_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Browser sessions (idp-proxy's session: section) with the real binaries,
// the certified provider and a real headless Chromium: see the README's
// table. Both tests drive browser/session.mjs (session_harness_test.go).

const alicePassword = "alice-password"

// TestBrowserSession: a protected page sends the browser through the
// provider's login page and back to the same page, served by the upstream
// (not the callback's JSON); reloads keep the session; past the access
// token's short lifetime (4 s at the provider) the session's token has
// been refreshed (the upstream sees another token); logout ends the
// session at the proxy and the provider; the next visit asks for the
// password again. Then the provider ends a new session on its own (its
// end-session page) and tells the proxy by back-channel logout: the next
// visit goes to the login again. Cookie store, one replica.
func TestBrowserSession(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider|needBrowser)
	start := time.Now()
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p := startProvider(t, providerOptions{
		RedirectURIs:           []string{base + "/auth/callback"},
		PostLogoutRedirectURIs: []string{base + "/public/bye"},
		AccessTokenTTL:         4,
		BackchannelLogoutURI:   base + "/auth/backchannel-logout",
	})
	up := startEchoUpstream(t, "app")
	px := startSessionProxy(t, sessionProxyOptions{
		name: "idp-proxy", port: port, serverURL: p.ServerURL(), publicURL: base,
		upstream: up.URL, store: "cookie", refreshMargin: 2 * time.Second,
	})
	t.Logf("provider and proxy ready after %s", time.Since(start).Round(100*time.Millisecond))
	page := base + "/app/page?x=1"
	login := browserStep{Do: "login", Username: "alice", Password: alicePassword}
	endSession := p.Issuer + "/protocol/openid-connect/logout"
	obs := runBrowser(t, []browserStep{
		// 0-2: sign in through the provider, back on the page, reload
		{Do: "goto", URL: page}, login, {Do: "reload"},
		// 3-5: past the access token's expiry: reload, a script's call
		{Do: "waitPastExp", SlackMs: 1000}, {Do: "reload"}, {Do: "fetch", Path: "/app/data"},
		// 6-8: logout, a script's call, the next visit
		{Do: "goto", URL: base + "/auth/logout", Until: base + "/public/bye"},
		{Do: "fetch", Path: "/app/data"}, {Do: "goto", URL: page},
		// 9-12: sign in again, log out at the provider itself, the next visit
		login, {Do: "goto", URL: endSession},
		{Do: "click", Selector: "#kc-logout", Until: endSession + "/success"},
		{Do: "goto", URL: page},
	})

	// 0: the protected page redirects to the login route, which redirects
	// to the provider's own login page.
	checkSentToLogin(t, obs[0], page, "/app/page?x=1", p.Issuer)

	// 1: after the password, back on the page the browser asked for.
	first := checkSignedIn(t, obs[1], page, "app")
	if !containsDoc(obs[1], "GET", base+"/auth/callback", http.StatusFound) {
		t.Errorf("login: the callback did not redirect back:%s", obs[1].docChain())
	}
	if found, httpOnly := obs[1].cookie("idp_session"); !found || !httpOnly {
		t.Errorf("after login: session cookie present=%v HttpOnly=%v, want both", found, httpOnly)
	}

	// 2: a reload keeps the session (no trip to the provider).
	reload := checkSignedIn(t, obs[2], page, "app")
	if len(obs[2].Docs) != 1 {
		t.Errorf("reload: want the page only:%s", obs[2].docChain())
	}

	// 3, 4: past the token's expiry, the page still answers, with a new
	// token from a refresh.
	t.Logf("waited %d ms for the access token to expire", obs[3].WaitedMs)
	refreshed := checkSignedIn(t, obs[4], page, "app")
	if refreshed.TokenFP == reload.TokenFP || refreshed.TokenExp <= reload.TokenExp {
		t.Errorf("after the token's expiry the upstream got the same token (exp %d, then %d): not refreshed",
			reload.TokenExp, refreshed.TokenExp)
	}
	if len(obs[4].Docs) != 1 {
		t.Errorf("the refresh must not involve the browser:%s", obs[4].docChain())
	}

	// 5: a script's call from the page rides on the session too.
	if f := obs[5].Fetch; f == nil || f.Status != http.StatusOK || !strings.Contains(f.Body, `"username":"alice"`) {
		t.Errorf("fetch /app/data with the session: %+v", f)
	}

	// 6: logout: the proxy's route, the provider's end-session endpoint
	// (id_token_hint, then its auto-submitted confirmation), and the
	// registered post-logout page.
	o := obs[6]
	if o.URL != base+"/public/bye" || o.Status != http.StatusOK || o.Echo == nil || o.Echo.User != "" {
		t.Errorf("logout landed at %s (%d), echo %+v:%s", o.URL, o.Status, o.Echo, o.docChain())
	}
	if !containsDoc(o, "GET", base+"/auth/logout", http.StatusFound) ||
		!containsDoc(o, "GET", endSession+"?", http.StatusOK) {
		t.Errorf("logout did not go through the provider's end-session endpoint:%s", o.docChain())
	}
	if found, _ := o.cookie("idp_session"); found {
		t.Error("the session cookie survived the logout")
	}
	if n := len(logLines(px, "idp: session ended by logout")); n != 1 {
		t.Errorf("%d logout records, want 1", n)
	}
	for _, l := range logLines(px, "idp: session ended by logout") {
		if l["provider_logout"] != "done" {
			t.Errorf("logout record %v: the provider's session was not ended", l)
		}
	}

	// 7: without a session a script's call gets 401, never a redirect.
	if f := obs[7].Fetch; f == nil || f.Status != http.StatusUnauthorized {
		t.Errorf("fetch /app/data after logout: %+v, want 401", f)
	}

	// 8: the next visit asks for the password again.
	checkSentToLogin(t, obs[8], page, "/app/page?x=1", p.Issuer)

	// 9-12: a new session, ended by the provider.
	second := checkSignedIn(t, obs[9], page, "app")
	if second.TokenFP == refreshed.TokenFP || second.TokenFP == first.TokenFP {
		t.Error("the second login forwarded an old token")
	}
	if o := obs[10]; !strings.HasPrefix(o.URL, endSession) || o.LoginForm {
		t.Errorf("the provider's end-session page: %s:%s", o.URL, o.docChain())
	}
	if !obs[11].LoggedOut {
		t.Errorf("the provider did not log out: %s:%s", obs[11].URL, obs[11].docChain())
	}
	checkSentToLogin(t, obs[12], page, "/app/page?x=1", p.Issuer)
	checkBackchannelLogout(t, p, px, -1)
	if n := len(logLines(px, "idp: session ended: the provider refused its refresh")); n != 0 {
		t.Errorf("%d sessions ended by a refused refresh: the back-channel logout should have ended it first", n)
	}

	// The upstream saw alice (only) on /app/, never the session cookie, and
	// three tokens: first login, refresh, second login.
	fps := map[string]bool{}
	for _, e := range up.requests() {
		if e.SessionCookie {
			t.Errorf("the upstream received the session cookie on %s", e.Path)
		}
		if strings.HasPrefix(e.Path, "/app/") {
			if e.Username != "alice" || e.TokenFP == "" {
				t.Errorf("upstream request %+v without alice's identity", e)
			}
			fps[e.TokenFP] = true
		}
	}
	if len(fps) < 3 {
		t.Errorf("the upstream saw %d distinct access tokens, want at least 3", len(fps))
	}
	checkNoTokens(t, px)
	t.Logf("TestBrowserSession took %s", time.Since(start).Round(100*time.Millisecond))
}

// TestBrowserSessionReplicas: two idp-proxy replicas share their sessions
// in Redis (session.store: redis) behind a load balancer. The login starts
// on replica A (/auth/login) and completes on replica B (/auth/callback);
// the session then works on both. The provider's back-channel logout
// reaches B and ends the session on A as well.
func TestBrowserSessionReplicas(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider|needBrowser)
	rdb, redisURL, prefix := testRedis(t)
	start := time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	p := startProvider(t, providerOptions{
		RedirectURIs:           []string{base + "/auth/callback"},
		PostLogoutRedirectURIs: []string{base + "/public/bye"},
		BackchannelLogoutURI:   base + "/auth/backchannel-logout",
	})
	replicas := map[string]string{}
	procs := map[string]*proc{}
	for _, name := range []string{"A", "B"} {
		port := freePort(t)
		replicas[name] = "http://127.0.0.1:" + strconv.Itoa(port)
		procs[name] = startSessionProxy(t, sessionProxyOptions{
			name: "idp-proxy-" + strings.ToLower(name), port: port, serverURL: p.ServerURL(), publicURL: base,
			upstream: startEchoUpstream(t, name).URL, store: "redis", redisURL: redisURL, redisPrefix: prefix,
			refreshMargin: time.Minute,
		})
	}
	fr := startFront(t, ln, replicas, func(r *http.Request) string {
		switch r.URL.Path {
		case "/auth/login":
			return "A"
		case "/auth/callback", "/auth/backchannel-logout":
			return "B"
		}
		if r.URL.Query().Get("replica") == "b" {
			return "B"
		}
		return "A"
	})
	t.Logf("provider, replicas and load balancer ready after %s", time.Since(start).Round(100*time.Millisecond))
	pageA, pageB := base+"/app/page?replica=a", base+"/app/page?replica=b"
	endSession := p.Issuer + "/protocol/openid-connect/logout"
	obs := runBrowser(t, []browserStep{
		// 0-2: sign in (login on A, callback on B), the page on A, then on B
		{Do: "goto", URL: pageA}, {Do: "login", Username: "alice", Password: alicePassword}, {Do: "goto", URL: pageB},
		// 3-4: log out at the provider itself (back-channel logout to B)
		{Do: "goto", URL: endSession}, {Do: "click", Selector: "#kc-logout", Until: endSession + "/success"},
		// 5-6: the page on A, then on B
		{Do: "goto", URL: pageA}, {Do: "goto", URL: pageB},
	})

	checkSentToLogin(t, obs[0], pageA, "/app/page?replica=a", p.Issuer)
	onA := checkSignedIn(t, obs[1], pageA, "A")
	onB := checkSignedIn(t, obs[2], pageB, "B")
	if onA.TokenFP != onB.TokenFP {
		t.Error("replica B forwarded another token than replica A for the same session")
	}
	var login, callback, backchannel []string
	for _, h := range fr.hops() {
		switch h.Path {
		case "/auth/login":
			login = append(login, h.Replica)
		case "/auth/callback":
			callback = append(callback, h.Replica)
		case "/auth/backchannel-logout":
			backchannel = append(backchannel, h.Method+" "+h.Replica)
		}
	}
	if len(login) == 0 || strings.Trim(strings.Join(login, ""), "A") != "" || strings.Join(callback, ",") != "B" ||
		strings.Join(backchannel, ",") != "POST B" {
		t.Errorf("load balancer: logins on %v, callbacks on %v, back-channel logouts %v", login, callback, backchannel)
	}
	if n := len(logLines(procs["B"], "idp: login completed")); n != 1 || len(logLines(procs["A"], "idp: login completed")) != 0 {
		t.Errorf("the login was completed %d times on B, want once (and never on A)", n)
	}

	if !obs[4].LoggedOut {
		t.Errorf("the provider did not log out: %s:%s", obs[4].URL, obs[4].docChain())
	}
	checkSentToLogin(t, obs[5], pageA, "/app/page?replica=a", p.Issuer)
	checkSentToLogin(t, obs[6], pageB, "/app/page?replica=b", p.Issuer)
	checkBackchannelLogout(t, p, procs["B"], 1)
	if n := len(logLines(procs["A"], "idp: back-channel logout")); n != 0 {
		t.Errorf("replica A received %d back-channel logouts, want none (B did)", n)
	}

	// Redis: the login state was spent once, the session is gone, the
	// user's index still names it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	keys := func(pattern string) []string {
		k, err := rdb.Keys(ctx, prefix+pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if n := len(keys("idp:used-login-state:*")); n != 1 {
		t.Errorf("%d spent login states in Redis, want 1", n)
	}
	if k := keys("idp:session:*"); len(k) != 0 {
		t.Errorf("sessions left in Redis after the back-channel logout: %d", len(k))
	}
	if k := keys("idp:sessions-by-sub:" + onA.User); len(k) != 1 {
		t.Errorf("no session index for alice in Redis: the session was not stored there")
	}
	checkNoTokens(t, procs["A"], procs["B"])
	t.Logf("TestBrowserSessionReplicas took %s", time.Since(start).Round(100*time.Millisecond))
}

// checkSentToLogin checks that visiting page without a (live) session
// answered 302 to {prefix}/login?return_to=<returnTo>, which led to the
// provider's own login page.
func checkSentToLogin(t *testing.T, o observation, page, returnTo, issuer string) {
	t.Helper()
	if len(o.Docs) < 3 || o.Docs[0].URL != page || o.Docs[0].Status != http.StatusFound {
		t.Errorf("%s: want a redirect to the login:%s", page, o.docChain())
		return
	}
	u, err := url.Parse(o.Docs[1].URL)
	if err != nil || u.Path != "/auth/login" || u.Query().Get("return_to") != returnTo || o.Docs[1].Status != http.StatusFound {
		t.Errorf("%s: the second hop is not /auth/login?return_to=%s:%s", page, returnTo, o.docChain())
	}
	if !o.LoginForm || !strings.HasPrefix(o.URL, issuer+"/login-actions/authenticate/") {
		t.Errorf("%s: want the provider's login page, got %s (%q):%s", page, o.URL, o.Title, o.docChain())
	}
}

// checkSignedIn checks that the browser shows page, served by the upstream
// named replica for alice, and returns what the upstream saw.
func checkSignedIn(t *testing.T, o observation, page, replica string) echo {
	t.Helper()
	if o.URL != page || o.Status != http.StatusOK || o.Echo == nil || o.LoginForm {
		t.Fatalf("want %s served by the upstream, got %s (%d, %q):%s", page, o.URL, o.Status, o.Title, o.docChain())
	}
	e := *o.Echo
	if e.Replica != replica || e.Username != "alice" || e.User == "" || !strings.Contains(e.Roles, "creator") ||
		e.TokenFP == "" || e.TokenExp == 0 || e.SessionCookie {
		t.Errorf("%s: the upstream saw %+v", page, e)
	}
	return e
}

// containsDoc reports whether the step loaded a document with method, a
// URL starting with prefix and status.
func containsDoc(o observation, method, prefix string, status int) bool {
	for _, d := range o.Docs {
		if d.Method == method && strings.HasPrefix(d.URL, prefix) && d.Status == status {
			return true
		}
	}
	return false
}

// checkBackchannelLogout checks that the provider delivered one
// back-channel logout and that px accepted it, ending want sessions (-1:
// the cookie store, which records the provider session as ended).
func checkBackchannelLogout(t *testing.T, p *provider, px *proc, want float64) {
	t.Helper()
	if n := strings.Count(p.stderr.String(), "backchannel logout delivered: client "+clientID); n != 1 {
		t.Errorf("the provider delivered %d back-channel logouts, want 1:\n%s", n, tail(p.stderr.String(), 2000))
	}
	lines := logLines(px, "idp: back-channel logout")
	if len(lines) != 1 || lines[0]["sessions_ended"] != want || lines[0]["sid"] == "" {
		t.Errorf("%s: back-channel logout records %v, want one ending %v sessions", px.name, lines, want)
	}
}
