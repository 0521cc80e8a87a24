package shortener_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo/visitinfotest"
)

// testGeoIP is a country database built with MaxMind's writer:
// 192.0.2.0/24 is DE, 198.51.100.0/24 JP, 2001:db8:1::/48 BR.
func testGeoIP(t testing.TB) *visitinfo.GeoIP { return visitinfotest.CountryDB(t) }

func withStats(g *visitinfo.GeoIP) func(*apiOptions) {
	return func(o *apiOptions) {
		o.VisitStats = true
		o.HandlerOptions.Country = g.Country
		o.HandlerOptions.ClientIP = shortener.ClientIPFromHeader("X-Forwarded-For")
	}
}

const (
	uaFirefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	uaIPhone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
	uaBot     = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

// visit redirects code with the given client headers (pairs).
func (a *api) visit(code string, hdr ...string) {
	a.t.Helper()
	req := httptest.NewRequest("GET", "/"+code+"?utm_source=secret-query", nil)
	req.RemoteAddr = "203.0.113.50:4711"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusFound {
		a.t.Fatalf("redirect %s: %d %s", code, rec.Code, rec.Body)
	}
}

type statsJSON struct {
	ShortCode   string    `json:"short_code"`
	From, To    time.Time `json:"-"`
	By          string    `json:"by"`
	Visits      int64     `json:"visits"`
	HumanVisits int64     `json:"human_visits"`
	BotVisits   int64     `json:"bot_visits"`
	Series      []struct {
		Start     time.Time `json:"start"`
		Visits    int64     `json:"visits"`
		BotVisits int64     `json:"bot_visits"`
	} `json:"series"`
	Referrers, Devices, Browsers, Countries []struct {
		Value  string `json:"value"`
		Visits int64  `json:"visits"`
	}
}

func breakdown(cs []struct {
	Value  string `json:"value"`
	Visits int64  `json:"visits"`
}) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Value+"="+itoa(c.Visits))
	}
	return strings.Join(parts, ",")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestVisitStatsAPI(t *testing.T) {
	a := newAPI(t, withStats(testGeoIP(t)))
	l := a.create("alice", `{"url":"https://example.com/"}`)
	a.visit(l.ShortCode, "User-Agent", uaFirefox, "Referer", "https://news.example/story?id=1", "X-Forwarded-For", "192.0.2.10")
	a.visit(l.ShortCode, "User-Agent", uaFirefox, "Referer", "https://news.example/other", "X-Forwarded-For", "10.0.0.1, 192.0.2.11")
	a.visit(l.ShortCode, "User-Agent", uaIPhone, "X-Forwarded-For", "198.51.100.7")
	a.visit(l.ShortCode, "User-Agent", uaBot, "X-Forwarded-For", "198.51.100.8")
	a.clock.add(2 * time.Hour)
	a.visit(l.ShortCode, "User-Agent", uaIPhone, "Referer", "android-app://com.slack/")
	// HEAD does not count, as for visits.
	a.call("HEAD", "/"+l.ShortCode, "", "")
	if err := a.svc.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := decodeJSON[statsJSON](t, a.call("GET", "/links/"+l.ShortCode+"/stats", "alice", ""), 200)
	if st.By != "day" || st.Visits != 5 || st.HumanVisits != 4 || st.BotVisits != 1 || len(st.Series) != 31 {
		t.Fatalf("stats: %+v", st)
	}
	last := st.Series[len(st.Series)-1]
	if last.Visits != 5 || last.BotVisits != 1 || !last.Start.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("today's bucket: %+v", last)
	}
	for name, got := range map[string]string{
		"referrers": breakdown(st.Referrers), "devices": breakdown(st.Devices),
		"browsers": breakdown(st.Browsers), "countries": breakdown(st.Countries),
	} {
		want := map[string]string{
			"referrers": "=2,news.example=2", "devices": "desktop=2,mobile=2",
			"browsers": "firefox=2,safari=2", "countries": "DE=2,=1,JP=1",
		}[name]
		if got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// By hour: the two hours with visits.
	st = decodeJSON[statsJSON](t, a.call("GET", "/links/"+l.ShortCode+"/stats?by=hour&from=2030-01-01T12:00:00Z&to=2030-01-01T15:00:00Z", "alice", ""), 200)
	if len(st.Series) != 3 || st.Series[0].Visits != 4 || st.Series[1].Visits != 0 || st.Series[2].Visits != 1 {
		t.Fatalf("by hour: %+v", st.Series)
	}
	// The visits total of the link counts bots too (max_visits as well).
	if got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200); got.Visits != 5 {
		t.Fatalf("link visits %d, want 5", got.Visits)
	}
	// Who may see them.
	checkProblem(t, a.call("GET", "/links/"+l.ShortCode+"/stats", "bob", ""), 404)
	decodeJSON[statsJSON](t, a.call("GET", "/links/"+l.ShortCode+"/stats", "root", "", "X-Roles", "admin"), 200)
	checkProblem(t, a.call("GET", "/links/"+l.ShortCode+"/stats", "", ""), 401)
}

func TestVisitStatsBadQuery(t *testing.T) {
	a := newAPI(t, withStats(testGeoIP(t)))
	l := a.create("alice", `{"url":"https://example.com/"}`)
	for _, q := range []string{
		"by=week", "by=day&by=hour", "from=yesterday", "from=2030-01-02&to=2030-01-01", "x=1", "from=1999-12-31",
		"by=hour&from=2029-11-01T00:00:00Z", "by=hour&from=2029-12-01T00:00:00Z&to=2029-12-02T00:00:00Z", "from=2000-01-01&to=2030-01-01", "%zz", "to=" + url.QueryEscape(strings.Repeat("9", 70)),
	} {
		p := checkProblem(t, a.call("GET", "/links/"+l.ShortCode+"/stats?"+q, "alice", ""), 400)
		if p.Detail == "" {
			t.Errorf("%s: no detail", q)
		}
	}
	off := newAPI(t, nil)
	l = off.create("alice", `{"url":"https://example.com/"}`)
	p := checkProblem(t, off.call("GET", "/links/"+l.ShortCode+"/stats", "alice", ""), 404)
	if !strings.Contains(p.Detail, "not enabled") {
		t.Fatalf("stats off: %q", p.Detail)
	}
}

// TestNoPersonalDataInBoltFile: after visits from known addresses, with a
// User-Agent, cookies, a query and a referrer path, none of them is
// anywhere in the bbolt file (text or binary address forms).
func TestNoPersonalDataInBoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "links.db")
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := newService(t, st, shortener.Options{VisitStats: true, VisitFlushInterval: time.Hour})
	h := newHandler(t, svc, shortener.HandlerOptions{
		Owner: shortener.OwnerFromHeader("X-User"), Country: testGeoIP(t).Country,
		ClientIP: shortener.ClientIPFromHeader("X-Forwarded-For"),
	})
	l, err := svc.Create(t.Context(), shortener.NewLink{URL: "https://example.com/", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ips := []string{"192.0.2.123", "198.51.100.77", "2001:db8:1::abcd"}
	for i, ip := range ips {
		req := httptest.NewRequest("GET", "/"+l.Code+"?utm_campaign=query-secret", nil)
		req.RemoteAddr = "[2001:db8:ffff::1]:5555"
		req.Header.Set("X-Forwarded-For", ip)
		req.Header.Set("User-Agent", uaFirefox+" UniqueAgentMarker/"+itoa(int64(i)))
		req.Header.Set("Referer", "https://news.example/path-secret?q=query-secret2")
		req.Header.Set("Cookie", "session=cookie-secret")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusFound {
			t.Fatalf("redirect: %d", rec.Code)
		}
	}
	if err := svc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("news.example")) || !bytes.Contains(data, []byte("DE")) {
		t.Fatal("the visits were not stored at all: the test would prove nothing")
	}
	needles := map[string][]byte{
		"UniqueAgentMarker": []byte("UniqueAgentMarker"), "Gecko": []byte("Gecko"), "path-secret": []byte("path-secret"),
		"query-secret": []byte("query-secret"), "cookie-secret": []byte("cookie-secret"), "2001:db8:ffff::1": []byte("2001:db8:ffff::1"),
	}
	for _, ip := range ips {
		a := net.ParseIP(ip)
		needles[ip] = []byte(ip)
		needles[ip+" (16 bytes)"] = a.To16()
		if a4 := a.To4(); a4 != nil {
			needles[ip+" (4 bytes)"] = a4
		}
	}
	for name, n := range needles {
		if bytes.Contains(data, n) {
			t.Errorf("the bbolt file holds %s", name)
		}
	}
}

// FuzzStatsQuery: any query string of GET /links/{code}/stats is a 200
// or a 400 problem+json.
func FuzzStatsQuery(f *testing.F) {
	for _, seed := range []string{"by=day", "by=hour", "from=2029-12-01&to=2030-01-01", "from=2029-12-31T23:59:59.999999999-12:00&by=hour", "to=2030-01-01T00:00:00Z", "by=hour&from=2029-01-01", "from=%00", "by=day&by=day"} {
		f.Add(seed)
	}
	a := &api{}
	var code string
	f.Fuzz(func(t *testing.T, q string) {
		if a.svc == nil {
			a = newAPI(t, withStats(testGeoIP(t)))
			code = a.create("alice", `{"url":"https://example.com/"}`).ShortCode
		}
		a.t = t
		req := httptest.NewRequest("GET", "/links/"+code+"/stats", nil)
		req.URL.RawQuery = q
		req.Header.Set("X-User", "alice")
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
		case 400:
			if rec.Header().Get("Content-Type") != problem.ContentType {
				t.Fatalf("400 without problem+json")
			}
		default:
			t.Fatalf("GET stats?%q: %d %s", q, rec.Code, rec.Body)
		}
	})
}

// With tracing, the traced store still keeps visit statistics (a wrapper
// that hid the capability would fail New).
func TestVisitStatsWithTracing(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	a := newAPI(t, func(o *apiOptions) {
		withStats(testGeoIP(t))(o)
		o.Options.TracerProvider = tp
	})
	l := a.create("alice", `{"url":"https://example.com/"}`)
	a.visit(l.ShortCode, "User-Agent", uaFirefox, "X-Forwarded-For", "192.0.2.1")
	if err := a.svc.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := decodeJSON[statsJSON](t, a.call("GET", "/links/"+l.ShortCode+"/stats", "alice", ""), 200)
	if st.Visits != 1 || breakdown(st.Countries) != "DE=1" {
		t.Fatalf("stats with tracing: %+v", st)
	}
}
