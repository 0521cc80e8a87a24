package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/internal/pgtest"
)

// A frozen PostgreSQL (the process stopped, or the network black-holed)
// fails each request after --store-timeout with 503 naming the link store
// and Retry-After, creates included, instead of holding it for as long as
// the database stays frozen; when it thaws the service recovers without a
// restart.
func TestFrozenPostgresAnswers503WithinStoreTimeout(t *testing.T) {
	dsn, _ := pgtest.Schema(t, pgtest.DSN(t, "the frozen-PostgreSQL test"), "shortener_frozen_")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	u.Host = fp.Addr()
	cfg := baseConfig(u.String())
	cfg.StoreTimeout = 300 * time.Millisecond
	cfg.CacheSize = 0
	base, stop, logs := startRun(t, cfg)
	defer func() {
		fp.Thaw()
		if err := stop(); err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	}()
	// The bound under test is 300 ms; the client's 10 s only turns a hang
	// into a failure instead of a stuck test.
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	create := func() *http.Response {
		t.Helper()
		resp, err := client.Post(base+"/shorten", "application/json", strings.NewReader(`{"url":"https://example.com/frozen"}`))
		if err != nil {
			t.Fatalf("POST /shorten: %v", err)
		}
		return resp
	}
	resp := create()
	var created struct {
		Code string `json:"short_code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST before the freeze = %d", resp.StatusCode)
	}

	fp.Freeze()
	check := func(what string, resp *http.Response) {
		t.Helper()
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(string(body), "the link store is unavailable") {
			t.Fatalf("%s while PostgreSQL is frozen = %d Retry-After %q %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	check("POST /shorten", create())
	resp, err = client.Get(base + "/" + created.Code)
	if err != nil {
		t.Fatalf("GET /{code}: %v", err)
	}
	check("GET /{code}", resp)

	fp.Thaw()
	resp = create()
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST after the thaw = %d", resp.StatusCode)
	}
}

// On SIGTERM the shortener drains like idp-proxy: /health fails at once
// while the listener still accepts, and every answer closes its
// connection, so that keep-alive clients do not lose a POST to the
// shutdown.
func TestDrainOnSIGTERM(t *testing.T) {
	cfg := baseConfig("memory:")
	cfg.DrainDelay = time.Second
	ctx, cancel := context.WithCancel(t.Context())
	logs := &syncBuffer{}
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, cfg, logs, runHooks{ready: func(a string) { addrc <- a }, drain: func() bool { return true }})
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case err := <-errc:
		cancel()
		t.Fatalf("run: %v\n%s", err, logs)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get("/health"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("health before the drain = %d close=%v", resp.StatusCode, resp.Close)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "draining") {
		if time.Now().After(deadline) {
			t.Fatalf("no drain began:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp := get("/health")
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
		t.Fatalf("health during the drain = %d close=%v, want 503 and Connection: close", resp.StatusCode, resp.Close)
	}
	resp, err := client.Post(base+"/shorten", "application/json", strings.NewReader(`{"url":"https://example.com/"}`))
	if err != nil {
		t.Fatalf("POST during the drain: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !resp.Close {
		t.Fatalf("POST during the drain = %d close=%v", resp.StatusCode, resp.Close)
	}
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// PostgreSQL down at start does not stop the shortener: it starts, every
// route that needs the store answers 503 (and /health 503), and once
// PostgreSQL answers it connects, migrates and serves, without a restart.
func TestStartsWithPostgresDown(t *testing.T) {
	dsn, _ := pgtest.Schema(t, pgtest.DSN(t, "the PostgreSQL-down-at-start test"), "shortener_down_")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	fp.Down()
	u.Host = fp.Addr()
	base, stop, logs := startRun(t, baseConfig(u.String()))
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	post := func() (int, string) {
		t.Helper()
		resp, err := client.Post(base+"/shorten", "application/json", strings.NewReader(`{"url":"https://example.com/later"}`))
		if err != nil {
			t.Fatalf("POST /shorten: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != http.StatusServiceUnavailable || !strings.Contains(body, "the link store is unavailable") {
		t.Fatalf("POST with PostgreSQL down since the start: %d %s", code, body)
	}
	if resp, err := client.Get(base + "/health"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("health with PostgreSQL down: %v %v", resp, err)
	}
	fp.Up()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := post()
		if code == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("POST after PostgreSQL came up: %d %s\n%s", code, body, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// With PostgreSQL frozen, links redirected a moment before keep
// redirecting from the cache (--cache-stale-if-error), however stale
// (--cache-ttl 1ns here), while a link never redirected answers 503
// naming the store.
func TestFrozenPostgresStillRedirectsCachedLinks(t *testing.T) {
	dsn, _ := pgtest.Schema(t, pgtest.DSN(t, "the frozen-PostgreSQL cache test"), "shortener_stale_")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	u.Host = fp.Addr()
	cfg := baseConfig(u.String())
	cfg.StoreTimeout = 300 * time.Millisecond
	cfg.CacheSize, cfg.CacheTTL, cfg.CacheStaleIfError = 100, time.Nanosecond, time.Hour
	base, stop, logs := startRun(t, cfg)
	defer func() {
		fp.Thaw()
		if err := stop(); err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	create := func(target string) string {
		t.Helper()
		resp, err := client.Post(base+"/shorten", "application/json", strings.NewReader(`{"url":"`+target+`"}`))
		if err != nil {
			t.Fatalf("POST /shorten: %v", err)
		}
		defer resp.Body.Close()
		var created struct {
			Code string `json:"short_code"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /shorten = %d %v", resp.StatusCode, err)
		}
		return created.Code
	}
	get := func(code string) (int, string) {
		resp, err := client.Get(base + "/" + code)
		if err != nil {
			t.Errorf("GET /%s: %v", code, err)
			return 0, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	hot, cold := create("https://example.com/hot"), create("https://example.com/cold")
	if code, body := get(hot); code != http.StatusFound {
		t.Fatalf("GET before the freeze = %d %s", code, body)
	}

	fp.Freeze()
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				hc, _ := get(hot)
				cc, body := get(cold)
				if cc == http.StatusServiceUnavailable && !strings.Contains(body, "the link store is unavailable") {
					t.Errorf("503 without naming the store: %s", body)
				}
				mu.Lock()
				outcomes[fmt.Sprintf("hot %d", hc)]++
				outcomes[fmt.Sprintf("cold %d", cc)]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if outcomes["hot 302"] != 100 || outcomes["cold 503"] != 100 {
		t.Fatalf("with PostgreSQL frozen: %v; want 100 × 302 for the link served before, 100 × 503 for the other", outcomes)
	}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "\nshortener_stale_redirects_total 100\n") || !strings.Contains(string(metrics), "\nshortener_store_answering 0\n") {
		t.Errorf("metrics with PostgreSQL frozen lack the 100 stale redirects or the store's state:\n%s", metrics)
	}
}

// A PostgreSQL that answers with a refusal no retry fixes (no such
// database, no such role) stops the start with PostgreSQL's own reason,
// instead of serving 503s and retrying for ever; only a PostgreSQL that
// does not answer is waited for (TestStartsWithPostgresDown).
func TestStartStopsWhenPostgresRefuses(t *testing.T) {
	dsn := pgtest.DSN(t, "the PostgreSQL-refuses test")
	for _, tc := range []struct{ user, db, want string }{
		{db: "shortener_no_such_db", want: `database "shortener_no_such_db" does not exist`},
		{user: "shortener_no_such_role", want: `role "shortener_no_such_role" does not exist`},
	} {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if tc.user != "" {
			u.User = url.User(tc.user)
		}
		if tc.db != "" {
			u.Path = "/" + tc.db
		}
		logs := &syncBuffer{}
		ready := false
		ctx, cancel := context.WithCancel(t.Context())
		err = run(ctx, baseConfig(u.String()), logs, runHooks{ready: func(string) { ready = true; cancel() }})
		cancel()
		if ready || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("start with %s: served=%v err=%v; want a start error with %q\n%s", u.Redacted(), ready, err, tc.want, logs)
		}
	}
}

// A PostgreSQL down at start that comes up refusing (here: the database
// does not exist) is logged as refusing, with its reason, not as still
// unreachable.
func TestPostgresDownAtStartThenRefusingIsLoggedAsRefusing(t *testing.T) {
	u, err := url.Parse(pgtest.DSN(t, "the PostgreSQL-refuses-later test"))
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	fp.Down()
	u.Host = fp.Addr()
	u.Path = "/shortener_no_such_db"
	_, stop, logs := startRun(t, baseConfig(u.String()))
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	}()
	fp.Up()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), `refuses the store`) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `database \"shortener_no_such_db\" does not exist`) {
		t.Fatalf("the refusal is logged without PostgreSQL's reason:\n%s", logs)
	}
}
