package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo/visitinfotest"
)

// TestVisitStatsFlags: --geoip-file (a database file written by MaxMind's
// writer) and --client-ip-header give the visits their country; the
// statistics answer through the API.
func TestVisitStatsFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "countries.mmdb")
	if err := os.WriteFile(path, visitinfotest.CountryDBBytes(t, visitinfotest.Networks), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := capture(t, "--geoip-file", path, "--client-ip-header", "X-Forwarded-For", "--trust-identity-headers", "--visit-retention-days", "7")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.VisitStats || cfg.GeoIPFile != path || cfg.ClientIPHeader != "X-Forwarded-For" || cfg.VisitRetentionDays != 7 {
		t.Fatalf("config: %+v", cfg)
	}
	geo, err := visitinfo.OpenGeoIP(cfg.GeoIPFile)
	if err != nil {
		t.Fatal(err)
	}
	defer geo.Close()
	cfg.MetricsListen = "off"
	svc, h, _, err := newAPI(cfg, memstore.New(), nil, geo, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	call := func(method, target, body string, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("X-Auth-Request-User", "alice")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := call("POST", "/links", `{"url":"https://example.com/"}`)
	var l struct {
		ShortCode string `json:"short_code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, ip := range []string{"192.0.2.1", "203.0.113.5, 198.51.100.9"} {
		if rec := call("GET", "/"+l.ShortCode, "", "X-Forwarded-For", ip, "User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"); rec.Code != http.StatusFound {
			t.Fatalf("redirect: %d", rec.Code)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rec = call("GET", "/links/"+l.ShortCode+"/stats", "")
	var st struct {
		Countries []struct {
			Value  string `json:"value"`
			Visits int64  `json:"visits"`
		} `json:"countries"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("stats: %d %s", rec.Code, rec.Body)
	}
	if len(st.Countries) != 2 || st.Countries[0].Value != "DE" || st.Countries[1].Value != "JP" {
		t.Fatalf("countries: %+v", st.Countries)
	}
}
