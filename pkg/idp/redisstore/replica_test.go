package redisstore_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// startReplica serves one replica of an app that signs users in with
// idpSrv and keeps their sessions in st: the /auth routes and GET /me
// (the user's name), on ln, or a new loopback listener when ln is nil.
// redirect is the app's callback URL; mutate adjusts the Config (a clock,
// the session's refresh margin).
func startReplica(t *testing.T, idpSrv *idptest.Server, st idp.SessionBackend, redirect string, ln net.Listener, mutate func(*idp.Config)) replica {
	t.Helper()
	cfg := idp.Config{
		ServerURL: idpSrv.URL, Realm: idpSrv.Realm, ClientID: "app", ClientSecret: "app-secret",
		IncludeRoutes: true, RedirectURI: redirect, SessionSecret: []byte(strings.Repeat("k", 32)),
		Session: &idp.SessionConfig{Backend: st},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := idp.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	mux := http.NewServeMux()
	mux.Handle("/auth/", p.Routes())
	mux.Handle("GET /me", p.WithUser(func(w http.ResponseWriter, _ *http.Request, u *idp.User) {
		_, _ = io.WriteString(w, u.PreferredUsername)
	}))
	srv := httptest.NewUnstartedServer(mux)
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return replica{p, srv.URL}
}
