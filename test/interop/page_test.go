package interop_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shortener's web page (pkg/shortener/web) in a real headless Chromium,
// behind the real idp-proxy in session mode, signed in at the certified
// provider: browser/page.mjs drives the page, this file judges it.

// firefoxUA is a browser's User-Agent for the visits the statistics
// count as people's.
const firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

// pageProxyConfig is idp-proxy's YAML for the page test: browser sessions
// (cookie store) and the demo's rules (cmd/idp-demo, Routes), with the
// /links API named explicitly instead of falling to the default policy.
func pageProxyConfig(port int, opsAddr, serverURL, upstream string) string {
	listen := "127.0.0.1:" + strconv.Itoa(port)
	return proxyYAMLHead(listen, opsAddr, upstream, realmYAML(serverURL), "http://"+listen, "") + `routes:
  - {match: "GET /health", public: true}
  - {match: "GET /{$}"}
  - {match: "GET /assets/"}
  - {match: "GET /{code}", public: true}
  - {match: "POST /shorten", roles: [creator]}
  - {match: "POST /links", roles: [creator]}
  - {match: "GET /links"}
  - {match: "GET /links/{code}"}
  - {match: "GET /links/{code}/qr"}
  - {match: "GET /links/{code}/stats"}
  - {match: "PATCH /links/{code}"}
  - {match: "DELETE /links/{code}"}
  - {match: "GET /admin/", roles: [admin]}
default_policy: deny
session:
  enabled: true
  store: cookie
  max_age: 1h
server:
  drain_delay: 0s
log:
  format: json
  level: debug
`
}

// pageStep is one step of browser/page.mjs (see there).
type pageStep struct {
	Do          string      `json:"do"`
	URL         string      `json:"url,omitempty"`
	Username    string      `json:"username,omitempty"`
	Password    string      `json:"password,omitempty"`
	Code        string      `json:"code,omitempty"`
	MaxVisits   int         `json:"maxVisits,omitempty"`
	Path        string      `json:"path,omitempty"`
	UserAgent   string      `json:"userAgent,omitempty"`
	UntilVisits *wantVisits `json:"untilVisits,omitempty"`
}

// wantVisits makes a reload step reload until the list shows Code with
// Visits visits.
type wantVisits struct {
	Code   string `json:"code"`
	Visits int    `json:"visits"`
}

type pageLink struct {
	Code     string   `json:"code"`
	ShortURL string   `json:"shortURL"`
	Href     string   `json:"href"`
	Target   string   `json:"target"`
	Meta     string   `json:"meta"`
	Visits   int      `json:"visits"`
	Buttons  []string `json:"buttons"`
}

// pageObservation is what browser/page.mjs reports after a step.
type pageObservation struct {
	Do     string     `json:"do"`
	URL    string     `json:"url"`
	Status int        `json:"status"`
	Title  string     `json:"title"`
	Docs   loadedDocs `json:"docs"`
	API    []struct {
		Method      string `json:"method"`
		Path        string `json:"path"`
		Status      int    `json:"status"`
		ContentType string `json:"contentType"`
	} `json:"api"`
	App *struct {
		SignIn      bool       `json:"signin"`
		Create      bool       `json:"create"`
		Mine        bool       `json:"mine"`
		Empty       bool       `json:"empty"`
		CustomCodes bool       `json:"customCodes"`
		SignedInAs  string     `json:"signedInAs"`
		SignOut     string     `json:"signOut"`
		Status      string     `json:"status"`
		Error       string     `json:"error"`
		DialogOpen  bool       `json:"dialogOpen"`
		MoreHidden  bool       `json:"moreHidden"`
		MoreDrawn   bool       `json:"moreDrawn"`
		Links       []pageLink `json:"links"`
	} `json:"app"`
	Refusal *struct {
		Heading string `json:"heading"`
		Detail  string `json:"detail"`
		Who     string `json:"who"`
		SignOut bool   `json:"signOut"`
		Styled  bool   `json:"styled"`
	} `json:"refusal"`
	LoginForm     bool     `json:"loginForm"`
	ConsoleErrors []string `json:"consoleErrors"`
	Dialogs       []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"dialogs"`
	Cookies []struct {
		Name     string `json:"name"`
		HTTPOnly bool   `json:"httpOnly"`
	} `json:"cookies"`
	Reloads int `json:"reloads"`
	Created *struct {
		Status   int    `json:"status"`
		Code     string `json:"code"`
		ShortURL string `json:"shortURL"`
		Detail   string `json:"detail"`
	} `json:"created"`
	Visit *struct {
		Status      int    `json:"status"`
		Location    string `json:"location"`
		ContentType string `json:"contentType"`
	} `json:"visit"`
	QR *struct {
		Open          bool   `json:"open"`
		Closed        bool   `json:"closed"`
		Src           string `json:"src"`
		Alt           string `json:"alt"`
		NaturalWidth  int    `json:"naturalWidth"`
		NaturalHeight int    `json:"naturalHeight"`
		URL           string `json:"url"`
		Focused       string `json:"focused"`
		Status        int    `json:"status"`
		ContentType   string `json:"contentType"`
	} `json:"qr"`
	Deleted *struct {
		Status int `json:"status"`
	} `json:"deleted"`
	Edited *struct {
		Status     int    `json:"status"`
		Open       bool   `json:"open"`
		Focused    string `json:"focused"`
		StillOpen  bool   `json:"stillOpen"`
		Target     string `json:"target"`
		Meta       string `json:"meta"`
		FieldLabel string `json:"fieldLabel"`
	} `json:"edited"`
	Stats *struct {
		Status      int      `json:"status"`
		Open        bool     `json:"open"`
		Closed      bool     `json:"closed"`
		Focused     string   `json:"focused"`
		Summary     string   `json:"summary"`
		Bars        int      `json:"bars"`
		BotBars     int      `json:"botBars"`
		ChartRole   string   `json:"chartRole"`
		ChartLabel  string   `json:"chartLabel"`
		Rows        int      `json:"rows"`
		RowVisits   int      `json:"rowVisits"`
		RowBots     int      `json:"rowBots"`
		Captions    []string `json:"captions"`
		Browsers    []string `json:"browsers"`
		Referrers   []string `json:"referrers"`
		ExternalRef bool     `json:"externalRef"`
	} `json:"stats"`
	Screenshot *struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	} `json:"screenshot"`
}

// link returns the link the page lists with code.
func (o pageObservation) link(code string) (pageLink, bool) {
	if o.App != nil {
		for _, l := range o.App.Links {
			if l.Code == code {
				return l, true
			}
		}
	}
	return pageLink{}, false
}

// codes lists the page's links, in order.
func (o pageObservation) codes() []string {
	var out []string
	if o.App != nil {
		for _, l := range o.App.Links {
			out = append(out, l.Code)
		}
	}
	return out
}

// loaded reports whether the page requested method path and got status.
func (o pageObservation) loaded(method, path string, status int) bool {
	for _, a := range o.API {
		if a.Method == method && a.Path == path && a.Status == status {
			return true
		}
	}
	return false
}

func (o pageObservation) docChain() string { return o.Docs.chain() }

// runPage runs browser/page.mjs with steps in one headless Chromium and
// returns one observation per step.
func runPage(t *testing.T, steps []pageStep) []pageObservation {
	t.Helper()
	var res struct {
		Observations []pageObservation `json:"observations"`
	}
	runScript(t, "page.mjs", map[string]any{
		"chromium": chromiumPath(), "timeoutMs": 20000,
		"viewport": map[string]int{"width": 1000, "height": 720}, "steps": steps,
	}, 90*time.Second, &res)
	if len(res.Observations) != len(steps) {
		t.Fatalf("browser: %d observations for %d steps", len(res.Observations), len(steps))
	}
	return res.Observations
}

// screenshotPath is where INTEROP_SCREENSHOT asks for a picture of the
// page ("" when unset); a relative path is taken from the module root
// (INTEROP_SCREENSHOT=docs/page.png writes the README's picture).
func screenshotPath() string {
	p := os.Getenv("INTEROP_SCREENSHOT")
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(repoRoot, p)
}

var randomCode = regexp.MustCompile(`^[A-Za-z0-9]{7}$`)

// TestBrowserShortenerPage: the shortener's page behind idp-proxy's
// browser session, in Chromium, as alice. GET / sends the browser through
// the provider's login page and back to the page, which lists no links;
// the page's form creates a link with a custom code and one with a random
// code (listed at once with 0 visits); two plain GETs of the short link
// (no cookie: the public rule) redirect; after a reload the list shows 2
// visits; the QR dialog loads its PNG through the session; Delete (with
// its confirmation) removes the link from the list, a reload confirms it
// is gone for the server, and the short link answers 404. No console
// error (the page's strict CSP included) at any step.
//
// With INTEROP_SCREENSHOT=docs/page.png it also creates two more links,
// visits them, and saves a picture of the page with four links there.
func TestBrowserShortenerPage(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider|needBrowser)
	start := time.Now()
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p := startProvider(t, providerOptions{RedirectURIs: []string{base + "/auth/callback"}})
	upstream, sp := startShortener(t, "--trust-identity-headers", "--base-url", base,
		"--page", "--custom-codes", "--visit-flush-interval", "100ms", "--logout-url", "/auth/logout")
	_, proxyBin := binaries(t)
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(pageProxyConfig(port, opsAddr, p.ServerURL(), upstream)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proxyBin, "serve", "--config", cfg)
	cmd.Env = cleanEnv()
	px := startProc(t, "idp-proxy", cmd)
	waitHTTP(t, px, "http://"+opsAddr+"/readyz", http.StatusOK)
	t.Logf("provider, shortener and proxy ready after %s", time.Since(start).Round(100*time.Millisecond))

	// Without a session the API answers 401 (never a redirect).
	if a := call(t, "GET", base+"/links", "", nil); a.Status != http.StatusUnauthorized {
		t.Errorf("GET /links without a session: %s, want 401", a)
	}

	const (
		code   = "getting-started"
		target = "https://example.com/docs/getting-started?from=interop"
		other  = "https://example.org/a/rather/long/path/to/some/page.html?utm_source=interop"
		edited = "https://example.com/docs/getting-started-v2"
	)
	short := base + "/" + code
	var steps []pageStep
	at := map[string]int{}
	add := func(name string, s pageStep) {
		if name != "" {
			at[name] = len(steps)
		}
		steps = append(steps, s)
	}
	add("open", pageStep{Do: "goto", URL: base + "/"})
	add("login", pageStep{Do: "login", Username: "alice", Password: alicePassword})
	add("create", pageStep{Do: "create", URL: target, Code: code})
	add("createRandom", pageStep{Do: "create", URL: other})
	add("visit1", pageStep{Do: "visit", URL: short, UserAgent: firefoxUA})
	add("visit2", pageStep{Do: "visit", URL: short, UserAgent: firefoxUA})
	add("reload", pageStep{Do: "reload", UntilVisits: &wantVisits{code, 2}})
	add("qr", pageStep{Do: "qr", Code: code})
	add("edit", pageStep{Do: "edit", Code: code, URL: edited, MaxVisits: 10})
	add("visitEdited", pageStep{Do: "visit", URL: short, UserAgent: firefoxUA})
	add("visitBot", pageStep{Do: "visit", URL: short, UserAgent: "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"})
	add("stats", pageStep{Do: "stats", Code: code, UntilVisits: &wantVisits{code, 4}})
	shot := screenshotPath()
	if shot != "" {
		add("", pageStep{Do: "create", URL: "https://www.rfc-editor.org/rfc/rfc6749", Code: "oauth2"})
		add("", pageStep{Do: "create", URL: "https://openid.net/specs/openid-connect-core-1_0.html", Code: "oidc-core", MaxVisits: 100})
		for range 3 {
			add("", pageStep{Do: "visit", URL: base + "/oauth2"})
		}
		add("", pageStep{Do: "visit", URL: base + "/oidc-core"})
		add("", pageStep{Do: "reload", UntilVisits: &wantVisits{"oauth2", 3}})
		add("screenshot", pageStep{Do: "screenshot", Path: shot})
	}
	add("delete", pageStep{Do: "delete", Code: code})
	add("visitGone", pageStep{Do: "visit", URL: short})
	add("reloadGone", pageStep{Do: "reload"})
	add("forbidden", pageStep{Do: "goto", URL: base + "/admin/"})
	obs := runPage(t, steps)
	var chain strings.Builder
	for i, o := range obs {
		fmt.Fprintf(&chain, "\n  %d %s: %v%s", i, o.Do, o.codes(), o.docChain())
	}
	t.Logf("links listed and documents loaded by each step (query values redacted):%s", chain.String())

	for i, o := range obs {
		for _, e := range o.ConsoleErrors {
			// Chromium asks every origin for /favicon.ico; neither the
			// provider nor the shortener has one (a 404 is expected).
			// Chromium logs the document's own 403 of the forbidden step
			// too; anything else there (a CSP refusal of the page's
			// inline stylesheet) is an error.
			forbidden := i == at["forbidden"] && strings.Contains(e, "status of 403 (Forbidden) ["+base+"/admin/]")
			if !strings.HasSuffix(e, "/favicon.ico]") && !forbidden {
				t.Errorf("step %d (%s): console error %q", i, o.Do, e)
			}
		}
		if o.App != nil && o.App.Error != "" {
			t.Errorf("step %d (%s): the page shows the error %q", i, o.Do, o.App.Error)
		}
	}

	// open: GET / → the login route → the provider's login page.
	checkPageSentToLogin(t, obs[at["open"]], base, p.Issuer)

	// login: back on the page, signed in, no links yet.
	o := obs[at["login"]]
	if o.URL != base+"/" || o.Status != http.StatusOK || o.App == nil || o.LoginForm {
		t.Fatalf("after login: %s (%d, %q), want the page:%s", o.URL, o.Status, o.Title, o.docChain())
	}
	if !o.App.Create || !o.App.Mine || o.App.SignIn || !o.App.Empty || len(o.App.Links) != 0 || !o.App.CustomCodes {
		t.Errorf("after login the page shows %+v, want the form (with custom codes) and an empty list", *o.App)
	}
	if o.App.SignedInAs != "alice" || o.App.SignOut != "/auth/logout" {
		t.Errorf("after login the header says signed in as %q, sign-out link %q; want alice and /auth/logout", o.App.SignedInAs, o.App.SignOut)
	}
	for _, asset := range []string{"/assets/app.js", "/assets/app.css", "/links"} {
		if !o.loaded("GET", asset, http.StatusOK) {
			t.Errorf("after login: GET %s did not answer 200: %+v", asset, o.API)
		}
	}
	if !pageCookie(o, "idp_session", true) {
		t.Errorf("after login: no HttpOnly idp_session cookie: %+v", o.Cookies)
	}

	// create: 201, listed first with 0 visits.
	o = obs[at["create"]]
	if c := o.Created; c == nil || c.Status != http.StatusCreated || c.Code != code || c.ShortURL != short {
		t.Fatalf("create %s: %+v", code, o.Created)
	}
	if l, ok := o.link(code); !ok || o.codes()[0] != code || l.ShortURL != short || l.Href != short ||
		l.Target != target || l.Visits != 0 || !strings.HasPrefix(l.Meta, "0 visits") {
		t.Errorf("after create the list is %+v", o.App.Links)
	}
	if o.App.Status != "Created "+short || !o.loaded("POST", "/links", http.StatusCreated) {
		t.Errorf("after create: status %q, requests %+v", o.App.Status, o.API)
	}
	o = obs[at["createRandom"]]
	random := ""
	if c := o.Created; c == nil || c.Status != http.StatusCreated || !randomCode.MatchString(c.Code) {
		t.Fatalf("create without a code: %+v", o.Created)
	} else {
		random = c.Code
	}
	if got := strings.Join(o.codes(), ","); got != random+","+code {
		t.Errorf("after the second create the list is %s, want %s,%s (newest first)", got, random, code)
	}

	// visits: plain GETs without a cookie, redirected by the public rule.
	for _, name := range []string{"visit1", "visit2"} {
		if v := obs[at[name]].Visit; v == nil || v.Status != http.StatusFound || v.Location != target {
			t.Errorf("%s: GET %s: %+v, want 302 to %s", name, short, v, target)
		}
	}
	// reload: the page again (no trip to the provider), 2 visits.
	o = obs[at["reload"]]
	if !onlyPage(o, base) {
		t.Errorf("reload: want the page only:%s", o.docChain())
	}
	if l, _ := o.link(code); l.Visits != 2 || !strings.HasPrefix(l.Meta, "2 visits") {
		t.Errorf("after 2 visits and a reload the page shows %q", l.Meta)
	}
	if l, _ := o.link(random); l.Visits != 0 {
		t.Errorf("the link nobody visited shows %q", l.Meta)
	}
	t.Logf("visit count shown after %d reload(s)", o.Reloads)
	// Two links, one page: no next page, so no "Show more".
	if !o.App.MoreHidden {
		t.Error(`"Show more" is not hidden although the list has no next page`)
	} else if o.App.MoreDrawn {
		// app.css's "button { display: inline-block }" once overrode the
		// hidden attribute: the button showed, and a click appended the
		// first page again.
		t.Error(`"Show more" is drawn although hidden (a display rule overrides [hidden])`)
	}

	// qr: the dialog shows the PNG of the short URL, fetched with the session.
	o = obs[at["qr"]]
	if q := o.QR; q == nil || !q.Open || !q.Closed || q.Status != http.StatusOK || q.ContentType != "image/png" ||
		q.Src != "/links/"+code+"/qr" || q.NaturalWidth < 100 || q.NaturalWidth != q.NaturalHeight ||
		q.URL != short || q.Alt != "QR code of "+short || q.Focused != "qr-close" {
		t.Errorf("QR dialog: %+v", o.QR)
	}
	if o.App.DialogOpen {
		t.Error("the QR dialog is still open after Close")
	}

	// edit: the dialog opens on the URL field, PATCH answers 200, the list
	// shows the new target and limit; the short URL redirects there at once
	// (one replica).
	o = obs[at["edit"]]
	if e := o.Edited; e == nil || e.Status != http.StatusOK || !e.Open || e.Focused != "edit-url" || e.StillOpen ||
		e.Target != edited || !strings.HasPrefix(e.Meta, "2 of 10 visits") || e.FieldLabel == "" {
		t.Errorf("edit dialog: %+v", o.Edited)
	}
	if !o.loaded("PATCH", "/links/"+code, http.StatusOK) {
		t.Errorf("edit: requests %+v", o.API)
	}
	if v := obs[at["visitEdited"]].Visit; v == nil || v.Status != http.StatusFound || v.Location != edited {
		t.Errorf("GET %s after the edit: %+v, want 302 to %s", short, v, edited)
	}
	// stats: 4 visits today (one by a link-preview bot), drawn as bars
	// in an inline SVG with the same numbers in a table.
	o = obs[at["stats"]]
	if st := o.Stats; st == nil || st.Status != http.StatusOK || !st.Open || !st.Closed || st.Focused != "stats-close" ||
		!strings.HasPrefix(st.Summary, "4 visits in the last 30 days: 3 by people, 1 by bots") ||
		st.Bars != 1 || st.BotBars != 1 || st.ChartRole != "img" || st.ChartLabel == "" ||
		st.Rows != 31 || st.RowVisits != 4 || st.RowBots != 1 || st.ExternalRef ||
		strings.Join(st.Captions, ",") != "Referrers,Devices,Browsers,Countries" || strings.Join(st.Browsers, ",") != "firefox" {
		t.Errorf("visits dialog: %+v", o.Stats)
	}
	if !o.loaded("GET", "/links/"+code+"/stats", http.StatusOK) {
		t.Errorf("stats: requests %+v", o.API)
	}

	if shot != "" {
		s := obs[at["screenshot"]].Screenshot
		if s == nil || s.Bytes == 0 {
			t.Errorf("screenshot: %+v", s)
		} else {
			t.Logf("screenshot of the page: %s (%d bytes)", s.Path, s.Bytes)
		}
	}

	// delete: confirmed, 204, gone from the list; the short link 404.
	o = obs[at["delete"]]
	if o.Deleted == nil || o.Deleted.Status != http.StatusNoContent {
		t.Errorf("delete: %+v", o.Deleted)
	}
	if len(o.Dialogs) != 1 || o.Dialogs[0].Type != "confirm" || o.Dialogs[0].Message != "Delete "+short+"? It stops redirecting." {
		t.Errorf("delete: dialogs %+v, want one confirmation", o.Dialogs)
	}
	if _, ok := o.link(code); ok || o.App.Status != "Deleted "+short {
		t.Errorf("after delete: list %v, status %q", o.codes(), o.App.Status)
	}
	if v := obs[at["visitGone"]].Visit; v == nil || (v.Status != http.StatusNotFound && v.Status != http.StatusGone) {
		t.Errorf("GET %s after delete: %+v, want 404 or 410", short, v)
	}
	o = obs[at["reloadGone"]]
	if !onlyPage(o, base) {
		t.Errorf("reload after delete: want the page only:%s", o.docChain())
	}
	if _, ok := o.link(code); ok {
		t.Errorf("after delete and a reload the list still has %s: %v", code, o.codes())
	}
	if _, ok := o.link(random); !ok {
		t.Errorf("after delete and a reload the other link %s is missing: %v", random, o.codes())
	}
	if a := call(t, "GET", short, "", nil); a.Status != http.StatusNotFound && a.Status != http.StatusGone {
		t.Errorf("GET %s after delete: %s, want 404 or 410", short, a)
	}
	// forbidden: a route that needs the realm role admin, which alice
	// lacks: the browser gets the refusal page (styled: its inline
	// stylesheet passes the CSP, and no console error above), not JSON;
	// a program still gets problem+json.
	o = obs[at["forbidden"]]
	if r := o.Refusal; o.Status != http.StatusForbidden || o.Title != "Access denied" || r == nil ||
		!strings.Contains(r.Detail, "lacks a required role") || r.Who != "Signed in as alice." || !r.SignOut || !r.Styled {
		t.Errorf("GET /admin/ as alice: %d %q %+v, want the styled 403 page", o.Status, o.Title, o.Refusal)
	}
	if a := call(t, "GET", base+"/admin/", "", nil); a.Status != http.StatusUnauthorized || !strings.Contains(a.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("GET /admin/ from a program: %s, want 401 problem+json", a)
	}
	checkNoTokens(t, px, sp)
	t.Logf("TestBrowserShortenerPage took %s", time.Since(start).Round(100*time.Millisecond))
}

// checkPageSentToLogin checks that GET / without a session went to the
// login route (return_to=/) and on to the provider's login page.
func checkPageSentToLogin(t *testing.T, o pageObservation, base, issuer string) {
	t.Helper()
	if len(o.Docs) < 3 || o.Docs[0].URL != base+"/" || o.Docs[0].Status != http.StatusFound {
		t.Errorf("GET / without a session: want a redirect to the login:%s", o.docChain())
		return
	}
	u, err := url.Parse(o.Docs[1].URL)
	if err != nil || u.Path != "/auth/login" || u.Query().Get("return_to") != "/" || o.Docs[1].Status != http.StatusFound {
		t.Errorf("GET / without a session: the second hop is not /auth/login?return_to=/:%s", o.docChain())
	}
	if !o.LoginForm || !strings.HasPrefix(o.URL, issuer+"/login-actions/authenticate/") {
		t.Errorf("GET / without a session: want the provider's login page, got %s (%q):%s", o.URL, o.Title, o.docChain())
	}
}

// onlyPage reports whether a reload step loaded the page (once per
// reload) and nothing else: no trip to the provider.
func onlyPage(o pageObservation, base string) bool {
	if len(o.Docs) == 0 || len(o.Docs) != max(o.Reloads, 1) {
		return false
	}
	for _, d := range o.Docs {
		if d.Method != "GET" || d.URL != base+"/" || d.Status != http.StatusOK {
			return false
		}
	}
	return true
}

// pageCookie reports whether the browser holds the cookie name with the
// given HttpOnly flag.
func pageCookie(o pageObservation, name string, httpOnly bool) bool {
	for _, c := range o.Cookies {
		if c.Name == name && c.HTTPOnly == httpOnly {
			return true
		}
	}
	return false
}
