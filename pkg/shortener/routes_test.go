package shortener_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// The handler itself says which routes need an identity and applies
// HandlerOptions.Authenticate to them: every such route answers 401 when the
// authenticator refuses, every other route is served.
func TestRoutesNeedingIdentityGoThroughAuthenticate(t *testing.T) {
	var reached []string
	svc, err := shortener.New(memstore.New(), shortener.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = append(reached, r.Method+" "+r.URL.Path)
				if r.Header.Get("Authorization") == "" {
					problem.Write(w, http.StatusUnauthorized, "no identity")
					return
				}
				next.ServeHTTP(w, r)
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	identity := 0
	for _, rt := range h.Routes() {
		path := strings.ReplaceAll(rt.Pattern, "{code}", "abcdefg")
		req := httptest.NewRequest(rt.Method, path, strings.NewReader(`{"url":"https://example.com"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rt.Identity {
			identity++
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s without identity: %d, want 401", rt.Method, rt.Pattern, rec.Code)
			}
		} else if rec.Code == http.StatusUnauthorized {
			t.Errorf("%s %s: 401 on a route that needs no identity", rt.Method, rt.Pattern)
		}
	}
	if identity == 0 {
		t.Fatal("no route needs an identity: the test shows nothing")
	}
	if len(reached) == 0 || reached[0] != "POST /shorten" {
		t.Fatalf("the authenticator saw %v", reached)
	}
}
