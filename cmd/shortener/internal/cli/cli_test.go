package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/jackc/pgx/v5/pgxpool"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// capture executes the root command with args and returns the config it
// would run with.
func capture(t *testing.T, args ...string) (config, error) {
	t.Helper()
	var got config
	cmd := newRootCmd(func(_ context.Context, cfg config, _ io.Writer) error {
		got = cfg
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return got, err
}

func TestDefaults(t *testing.T) {
	cfg, err := capture(t)
	if err != nil {
		t.Fatal(err)
	}
	want := config{Listen: "127.0.0.1:8000", Store: "bolt:./data/shortener.db", LogFormat: "auto", LogLevel: slog.LevelInfo,
		AccessLog: true, IdentityHeader: "X-Auth-Request-User", AssertionHeader: "X-Auth-Request-Assertion", ShutdownTimeout: 25 * time.Second,
		DrainDelay: 5 * time.Second, StoreTimeout: 5 * time.Second,
		Cache: true, CacheSize: 100_000, CacheTTL: 5 * time.Second, CacheStaleIfError: time.Minute, MetricsListen: "127.0.0.1:9091",
		CustomCodes: true, Page: true, LoginURL: "/auth/login?return_to=/", RolesHeader: "X-Auth-Request-Roles",
		UsernameHeader:     "X-Auth-Request-Preferred-Username",
		VisitFlushInterval: time.Second, VisitStats: true, VisitRetentionDays: 30,
		IDPTokenLocation: "header", IDPCookieName: "access_token"}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("defaults = %+v, want %+v", cfg, want)
	}
}

func TestEnvAndFlags(t *testing.T) {
	t.Setenv("SHORTENER_LISTEN", "127.0.0.1:9999")
	t.Setenv("SHORTENER_STORE", "memory:")
	t.Setenv("SHORTENER_BASE_URL", "https://sho.rt")
	t.Setenv("SHORTENER_TRUST_IDENTITY_HEADERS", "true")
	t.Setenv("SHORTENER_LOG_FORMAT", "text")
	t.Setenv("SHORTENER_CACHE_SIZE", "0")
	cfg, err := capture(t, "--listen", "127.0.0.1:7777", "--metrics-listen", "127.0.0.1:9100", "--cache-ttl", "5s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:7777" || cfg.Store != "memory:" || cfg.BaseURL != "https://sho.rt" ||
		!cfg.TrustIdentity || cfg.LogFormat != "text" || cfg.MetricsListen != "127.0.0.1:9100" ||
		cfg.CacheSize != 0 || cfg.CacheTTL != 5*time.Second {
		t.Fatalf("config = %+v", cfg)
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		env  [2]string
		args []string
	}{
		{args: []string{"--log-format", "xml"}},
		{args: []string{"--log-level", "loud"}},
		{args: []string{"--store", "mysql://x"}},
		{args: []string{"--store", "sqlite:"}},
		{args: []string{"--store", "bolt:"}},
		{args: []string{"--listen", ""}},
		{args: []string{"--trust-identity-headers", "--identity-header", "X Bad"}},
		{args: []string{"extra-arg"}},
		{env: [2]string{"SHORTENER_TRUST_IDENTITY_HEADERS", "yes please"}},
		{env: [2]string{"SHORTENER_SHUTDOWN_TIMEOUT", "soon"}},
		{args: []string{"--drain-delay", "-1s"}},
		{args: []string{"--store-timeout", "0s"}},
		{args: []string{"--cache-size", "-1"}},
		{env: [2]string{"SHORTENER_CACHE_SIZE", "lots"}},
		{args: []string{"--cache-ttl", "0s"}},
		{args: []string{"--cache-stale-if-error", "-1s"}},
		{args: []string{"--visit-flush-interval", "0s"}},
		{args: []string{"--idp-token-location", "query"}},
		{args: []string{"--idp-token-location", "cookie"}}, // needs --idp-server-url
		{args: []string{"--trust-identity-headers", "--roles-header", ""}},
		{env: [2]string{"SHORTENER_CUSTOM_CODES", "maybe"}},
		{args: []string{"--visit-retention-days", "0"}},
		{env: [2]string{"SHORTENER_VISIT_RETENTION_DAYS", "a month"}},
		{args: []string{"--visit-stats=false", "--geoip-file", "countries.mmdb"}},
		{args: []string{"--client-ip-header", "X Bad"}},
		{env: [2]string{"SHORTENER_VISIT_STATS", "sometimes"}},
	}
	for _, tc := range tests {
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], tc.env[1])
		}
		if _, err := capture(t, tc.args...); err == nil {
			t.Errorf("%v %v accepted", tc.env, tc.args)
		}
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], "")
		}
	}
}

func TestParseStore(t *testing.T) {
	tests := []struct {
		spec string
		kind storeKind
		arg  string
	}{
		{"", kindBolt, "./data/shortener.db"},
		{"bolt:./data/x.db", kindBolt, "./data/x.db"},
		{"bolt:///var/lib/x.db", kindBolt, "/var/lib/x.db"},
		{"/var/lib/x.db", kindBolt, "/var/lib/x.db"},
		{"links.db", kindBolt, "links.db"},
		{"memory:", kindMemory, ""},
		{"postgres://u:p@h/db?pool_max_conns=4", kindPostgres, "postgres://u:p@h/db?pool_max_conns=4"},
		{"postgresql://h/db", kindPostgres, "postgresql://h/db"},
	}
	for _, tc := range tests {
		kind, arg, err := parseStore(tc.spec)
		if err != nil || kind != tc.kind || arg != tc.arg {
			t.Errorf("parseStore(%q) = %v %q %v", tc.spec, kind, arg, err)
		}
	}
	if got := redact("postgres://u:secret@h/db"); strings.Contains(got, "secret") {
		t.Errorf("redact = %q", got)
	}
}

func TestIdentityHeaderTrustedOnlyWhenTold(t *testing.T) {
	for _, trust := range []bool{false, true} {
		st := memstore.New()
		cfg := config{BaseURL: "https://sho.rt", TrustIdentity: trust, IdentityHeader: "X-Auth-Request-User"}
		h, _, err := newHandlers(cfg, st, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/shorten", strings.NewReader(`{"url":"https://example.com/"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Auth-Request-User", "alice")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct {
			ShortCode string `json:"short_code"`
		}
		if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			t.Fatalf("POST = %d %s", rec.Code, rec.Body)
		}
		l, _ := st.Get(t.Context(), body.ShortCode)
		want := ""
		if trust {
			want = "alice"
		}
		if l.CreatedBy != want {
			t.Fatalf("trust=%v: created_by = %q, want %q", trust, l.CreatedBy, want)
		}
	}
}

// startRun runs the service in the background and returns its base URL, a
// stop function and the log buffer.
func startRun(t *testing.T, cfg config) (string, func() error, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs := &syncBuffer{}
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, logs, runHooks{ready: func(a string) { addrc <- a }}) }()
	select {
	case a := <-addrc:
		stop := func() error { cancel(); return <-errc }
		return "http://" + a, stop, logs
	case err := <-errc:
		cancel()
		t.Fatalf("run: %v\n%s", err, logs)
	}
	return "", nil, nil
}

func baseConfig(store string) config {
	return config{Listen: "127.0.0.1:0", Store: store, LogFormat: "json", AccessLog: true, ShutdownTimeout: 5 * time.Second, MetricsListen: metricsOnAPI}
}

func TestRunServesAndShutsDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "links.db")
	base, stop, logs := startRun(t, baseConfig("bolt:"+path))
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := client.Post(base+"/shorten", "application/json", strings.NewReader(`{"url":"https://example.com/x?y=1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ ShortCode, ShortURL string }
	_ = json.NewDecoder(resp.Body).Decode(&struct {
		ShortCode *string `json:"short_code"`
		ShortURL  *string `json:"short_url"`
	}{&c.ShortCode, &c.ShortURL})
	resp.Body.Close()
	if resp.StatusCode != 201 || c.ShortURL != base+"/"+c.ShortCode {
		t.Fatalf("POST = %d %+v (base %s)", resp.StatusCode, c, base)
	}
	resp, err = client.Get(c.ShortURL)
	if err != nil || resp.StatusCode != 302 || resp.Header.Get("Location") != "https://example.com/x?y=1" {
		t.Fatalf("GET = %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(m, []byte(`shortener_http_requests_total{code="302",route="redirect"} 1`)) {
		t.Fatalf("metrics:\n%s", m)
	}
	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	for _, want := range []string{`"msg":"request"`, `"path":"/shorten"`, `"status":201`, `"msg":"store closed"`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	// The store was closed: the file lock is free and the link is there.
	s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(t.Context(), c.ShortCode); err != nil {
		t.Fatal(err)
	}
}

// /metrics is never on the public API port unless asked for: by default
// it has its own loopback listener.
func TestMetricsOffThePublicPortByDefault(t *testing.T) {
	cfg, err := capture(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsListen != defaultMetricsListen {
		t.Fatalf("default metrics-listen %q", cfg.MetricsListen)
	}
	h, _, err := newHandlers(cfg, memstore.New(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code == http.StatusOK {
		t.Fatalf("GET /metrics on the API handler = 200 with the default settings")
	}
	if _, err := capture(t, "--metrics-listen", ""); err == nil || !strings.Contains(err.Error(), "metrics-listen") {
		t.Fatalf("empty metrics-listen: %v", err)
	}
}

func TestSeparateMetricsListener(t *testing.T) {
	cfg := baseConfig("memory:")
	cfg.MetricsListen = "127.0.0.1:0"
	base, stop, _ := startRun(t, cfg)
	defer stop()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("/metrics on the API listener = %d, want 404", resp.StatusCode)
	}
}

// blockingStore blocks Create until released, to test graceful shutdown.
type blockingStore struct {
	shortener.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) Create(ctx context.Context, l shortener.Link) error {
	close(b.entered)
	<-b.release
	return b.Store.Create(ctx, l)
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	st := &blockingStore{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	h, _, err := newHandlers(config{MetricsListen: "off"}, st, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Start()
	var wg sync.WaitGroup
	var status int
	wg.Go(func() {
		resp, err := http.Post(srv.URL+"/shorten", "application/json", strings.NewReader(`{"url":"https://example.com/"}`))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		status = resp.StatusCode
	})
	<-st.entered
	done := make(chan struct{})
	go func() { srv.Config.Shutdown(context.Background()); close(done) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("shutdown did not wait for the in-flight request")
	default:
	}
	close(st.release)
	wg.Wait()
	<-done
	if status != 201 {
		t.Fatalf("in-flight request got %d", status)
	}
}

// syncBuffer is the shared log sink safe for concurrent writers.
type syncBuffer = testsupport.SyncBuffer

// A value that looks like a PostgreSQL DSN is never a bbolt file named
// like it: it is PostgreSQL, or an error that says what is wrong (the
// parameter, never the password).
func TestParseStoreDSNShapes(t *testing.T) {
	for _, spec := range []string{
		"host=db user=app dbname=links",
		" host = db user=app",
		"user=app password='s e\\'cret' host=db",
		"HOST=db",
	} {
		if kind, arg, err := parseStore(spec); err != nil || kind != kindPostgres || arg != spec {
			t.Errorf("parseStore(%q) = %v %q %v, want PostgreSQL", spec, kind, arg, err)
		}
	}
	for _, tc := range []struct{ spec, want string }{
		{"postgres//u@h/db", "postgres://user:password@host"},
		{"postgres:/u@h/db", "postgres://user:password@host"},
		{"postgresql:h", "postgres://user:password@host"},
		{"Postgres:/h/db", "postgres://user:password@host"},
		{"postgres://u:secret@h/db?pool_max_conns=abc", "pool_max_conns"},
		{"postgres://u:secret@h:abc/db", "port"},
		{"postgres://u:sec ret%zz@h/db", "URL"},
		{"host=h user=u password=secret pool_max_conns=abc", "pool_max_conns"},
		{"host=h password=secret sslmode=bogus", "sslmode"},
	} {
		kind, arg, err := parseStore(tc.spec)
		if err == nil {
			t.Errorf("parseStore(%q) = %v %q, want an error", tc.spec, kind, arg)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("parseStore(%q): %v; want it to name %q and never the password", tc.spec, err, tc.want)
		}
	}
	// File names that merely contain the words stay files.
	for _, spec := range []string{"postgres.db", "./postgres/links.db", "data/host=a.db", "postgresql", "hostname=x.db"} {
		if kind, arg, err := parseStore(spec); err != nil || kind != kindBolt || arg != spec {
			t.Errorf("parseStore(%q) = %v %q %v, want the bbolt file", spec, kind, arg, err)
		}
	}
	if got := redact("host=h user=u password='se cret' dbname=x"); strings.Contains(got, "cret") || !strings.Contains(got, "dbname=x") {
		t.Errorf("redact of a keyword DSN = %q", got)
	}
}

// FuzzParseStore: any --store value gives one answer without panicking;
// a PostgreSQL answer is a DSN that parses, a bbolt answer a value that
// does not look like a DSN, and a password never reaches the error.
func FuzzParseStore(f *testing.F) {
	for _, s := range []string{"", "memory:", "bolt:x.db", "x.db", "postgres://u:p@h/db", "postgres//h", "postgres:/h",
		"host=h user=u", "host=h pool_max_conns=abc", "postgresql://h/db?sslmode=bogus", "a://b", "c:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		kind, arg, err := parseStore(spec)
		if err != nil {
			return
		}
		switch kind {
		case kindPostgres:
			if _, perr := pgxpool.ParseConfig(arg); perr != nil {
				t.Fatalf("parseStore(%q) = PostgreSQL %q, which does not parse: %v", spec, arg, perr)
			}
		case kindBolt:
			if arg == "" || looksLikePostgresURL(arg) || looksLikeKeywordDSN(arg) {
				t.Fatalf("parseStore(%q) = bbolt file %q", spec, arg)
			}
		}
	})
}

// --cache=false is the redirect cache's switch; the size keeps its
// default, so that zero is never needed to mean "off".
func TestCacheSwitch(t *testing.T) {
	cfg, err := capture(t, "--cache=false")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cache || cfg.CacheSize != 100_000 {
		t.Fatalf("--cache=false: cache %v, size %d; want off, the default size", cfg.Cache, cfg.CacheSize)
	}
	t.Setenv("SHORTENER_CACHE", "false")
	if cfg, err = capture(t); err != nil || cfg.Cache {
		t.Fatalf("SHORTENER_CACHE=false: cache %v, %v", cfg.Cache, err)
	}
}
