package idp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

const clientID = "shortener"

// newPlugin starts a Plugin against srv with cfg adjusted by mutate, and
// waits until its keys are loaded.
func newPlugin(t testing.TB, srv *idptest.Server, mutate func(*idp.Config)) *idp.Plugin {
	t.Helper()
	cfg := idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := idp.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return p
}

// okHandler answers 200 "ok" and records that it was reached.
type okHandler struct{ calls int }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls++
	_, _ = w.Write([]byte("ok"))
}

func do(t testing.TB, h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
