package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// readyz returns the readiness status code and document.
func readyz(t *testing.T, ops string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(ops + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

// idp-proxy starts while Redis (session.store redis) is down: it serves
// bearer tokens, answers 503 naming the session store for sessions, and
// /readyz says which dependency is missing; when Redis comes back,
// sessions work without a restart.
func TestServeStartsWithRedisDown(t *testing.T) {
	ru := testneed.RedisURL(t, "the Redis session store test")
	u, err := url.Parse(ru)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	fp.Down()
	u.Host = fp.Addr()

	idpSrv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{svc, {ID: "shortener", Secret: "shortener-secret"}}})
	cfg := writeIssuerConfig(t, idpSrv, newUpstream(t))
	y := mustRead(t, cfg) + "session: {enabled: true, store: redis, redis_url: \"" + u.String() +
		"\", redis_prefix: \"idp-proxy-test-" + time.Now().Format("150405.000000") + ":\"}\n"
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeUnready(t, cfg)
	waitReady(t, http.DefaultClient, s.ops+"/readyz")
	code, doc := readyz(t, s.ops)
	if code != http.StatusOK || doc["status"] != "degraded" || doc["session_store_reachable"] != false {
		t.Fatalf("readyz with Redis down = %d %v, want 200 degraded with session_store_reachable false", code, doc)
	}
	creator := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	if code := status(t, "POST", s.proxy+"/shorten", creator); code != http.StatusOK {
		t.Fatalf("bearer token with Redis down: %d", code)
	}
	session := func() (int, string) {
		req, _ := http.NewRequest("POST", s.proxy+"/shorten", nil)
		req.AddCookie(&http.Cookie{Name: "idp_session", Value: strings.Repeat("A", 52)})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := session(); code != http.StatusServiceUnavailable || !strings.Contains(body, "session store is unavailable") {
		t.Fatalf("a session with Redis down: %d %s", code, body)
	}

	fp.Up()
	waitFor(t, "the session store reachable in /readyz", func() bool {
		_, doc := readyz(t, s.ops)
		return doc["status"] == "ready" && doc["session_store_reachable"] == true
	})
	if code, body := session(); code != http.StatusUnauthorized {
		t.Fatalf("an unknown session with Redis back: %d %s, want 401", code, body)
	}
}

// With Redis frozen (it accepts connections and never answers), /readyz
// and a request with a session answer within the readiness probe's
// timeout (2 s in deploy/k8s), without read_timeout in session.redis_url:
// every Redis call is bounded by redisstore.DefaultTimeout.
func TestServeRedisFrozen(t *testing.T) {
	ru := testneed.RedisURL(t, "the frozen Redis test")
	u, err := url.Parse(ru)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	u.Host = fp.Addr()
	u.RawQuery = "" // no timeout of the user's

	idpSrv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{svc, {ID: "shortener", Secret: "shortener-secret"}}})
	cfg := writeIssuerConfig(t, idpSrv, newUpstream(t))
	y := mustRead(t, cfg) + "session: {enabled: true, store: redis, redis_url: \"" + u.String() +
		"\", redis_prefix: \"idp-proxy-test-" + time.Now().Format("150405.000000") + ":\"}\n"
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeUnready(t, cfg)
	waitReady(t, http.DefaultClient, s.ops+"/readyz")
	session := func() (int, string) {
		req, _ := http.NewRequest("POST", s.proxy+"/shorten", nil)
		req.AddCookie(&http.Cookie{Name: "idp_session", Value: strings.Repeat("A", 52)})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := session(); code != http.StatusUnauthorized { // Redis answers: an unknown session
		t.Fatalf("an unknown session with Redis up: %d %s", code, body)
	}

	fp.Freeze()
	t.Cleanup(fp.Thaw)
	const probeTimeout = 2 * time.Second
	start := time.Now()
	code, doc := readyz(t, s.ops)
	if took := time.Since(start); code != http.StatusOK || took >= probeTimeout {
		t.Fatalf("readyz with Redis frozen: %d %v after %s, want 200 within the probe's %s", code, doc, took.Round(time.Millisecond), probeTimeout)
	}
	start = time.Now()
	code, body := session()
	if took := time.Since(start); code != http.StatusServiceUnavailable || !strings.Contains(body, "session store is unavailable") || took >= probeTimeout {
		t.Fatalf("a session with Redis frozen: %d %s after %s, want 503 naming the session store within %s", code, body, took.Round(time.Millisecond), probeTimeout)
	}
}
