package idp_test

import (
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// spanAttrs returns the attributes of the spans named name, in order.
func spanAttrs(spans []sdktrace.ReadOnlySpan, name string) []map[attribute.Key]string {
	var out []map[attribute.Key]string
	for _, s := range spans {
		if s.Name() != name {
			continue
		}
		m := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value.String()
		}
		out = append(out, m)
	}
	return out
}

// noSecrets fails t when a span's name, attribute, event or status
// carries one of secrets.
func noSecrets(t *testing.T, spans []sdktrace.ReadOnlySpan, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		texts := []string{s.Name(), s.Status().Description}
		for _, kv := range s.Attributes() {
			texts = append(texts, kv.Value.String())
		}
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.String())
			}
		}
		for _, txt := range texts {
			for _, sec := range secrets {
				if sec != "" && strings.Contains(txt, sec) {
					t.Fatalf("span %s carries a secret: %q", s.Name(), txt)
				}
			}
		}
	}
}

// TestTracingSpans: the login flow and protected requests record
// idp.authorize (cache miss, then hit), idp.jwks.fetch,
// idp.token.exchange and idp.token.refresh, with no token, claim value,
// cookie or query string in them.
func TestTracingSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) { c.TracerProvider = tp })
	doc := decodeDoc(t, e.get(t, e.loginToCallback(t)))
	// The callback verified doc.AccessToken already: a minted token is
	// new to the cache.
	minted := e.idp.Mint(map[string]any{"aud": clientID, "sub": "user-alice", "preferred_username": "alice"})
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, e.base+"/me?q=secret-query", nil)
		req.Header.Set("Authorization", "Bearer "+minted)
		if r := e.do(t, req); r.StatusCode != 200 {
			t.Fatalf("/me: %d", r.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	req.Header.Set("Authorization", "Bearer not.a.token")
	if r := e.do(t, req); r.StatusCode != 401 {
		t.Fatalf("/me with a bad token: %d", r.StatusCode)
	}
	doc2 := decodeDoc(t, e.post(t, "/auth/refresh", "application/json", `{"refresh_token":"`+doc.RefreshToken+`"}`))

	spans := rec.Ended()
	az := spanAttrs(spans, "idp.authorize")
	if len(az) != 3 {
		t.Fatalf("%d idp.authorize spans, want 3", len(az))
	}
	want := []struct{ cache, outcome string }{{"miss", "allowed"}, {"hit", "allowed"}, {"miss", "invalid_token"}}
	for i, w := range want {
		if az[i][idp.AttrCache] != w.cache || az[i][idp.AttrOutcome] != w.outcome || az[i][idp.AttrIssuer] != e.idp.Issuer {
			t.Errorf("idp.authorize #%d: %v, want cache %s, outcome %s, issuer %s", i, az[i], w.cache, w.outcome, e.idp.Issuer)
		}
	}
	for _, name := range []string{"idp.jwks.fetch", "idp.token.exchange", "idp.token.refresh"} {
		if len(spanAttrs(spans, name)) == 0 {
			t.Errorf("no %s span", name)
		}
	}
	if f := spanAttrs(spans, "idp.jwks.fetch"); len(f) > 0 && f[0]["idp.jwks.keys"] == "" {
		t.Errorf("idp.jwks.fetch without the key count: %v", f[0])
	}
	noSecrets(t, spans, minted, doc.AccessToken, doc.RefreshToken, doc.IDToken, doc2.AccessToken, doc2.RefreshToken,
		"not.a.token", "secret-query", "user-alice", "alice", clientSecret)
}

// TestNoTracerNoSpans: without a TracerProvider the plugin records
// nothing and authorizes as before, allocating nothing for tracing.
func TestNoTracerNoSpans(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	tok := srv.Mint(map[string]any{"aud": clientID})
	h := p.Middleware(&okHandler{})
	if r := do(t, h, "GET", "/x", "Authorization", "Bearer "+tok); r.Code != 200 {
		t.Fatalf("%d", r.Code)
	}
	r, _ := http.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	allocs := testing.AllocsPerRun(100, func() { _ = p.Authorize(r) })
	if allocs != 0 {
		t.Fatalf("Authorize of a cached token allocates %v times", allocs)
	}
	if v := p.Authorize(r); !v.Cached {
		t.Fatal("a cached token's verdict has Cached false")
	}
}

// TestTracingIssuerOfToken: with several trusted issuers, idp.authorize
// names the issuer of the token (URL and name), not the primary one.
func TestTracingIssuerOfToken(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := idptest.NewServer(t)
	b := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	p := newPlugin(t, a, func(c *idp.Config) {
		c.TracerProvider = tp
		c.Issuers = []idp.TrustedIssuer{{Name: "ci", IssuerURL: b.Issuer, Audiences: []string{ciAudience},
			Claims: idp.ClaimMapping{Preset: idp.PresetGeneric}}}
	})
	h := p.Middleware(&okHandler{})
	if r := do(t, h, "GET", "/x", "Authorization", "Bearer "+b.Mint(b.GenericClaims(ciAudience, "deploy-bot", "deployer"))); r.Code != 200 {
		t.Fatalf("second issuer's token: %d", r.Code)
	}
	az := spanAttrs(rec.Ended(), "idp.authorize")
	if len(az) != 1 || az[0][idp.AttrIssuer] != b.Issuer || az[0][idp.AttrIssuerName] != "ci" {
		t.Fatalf("idp.authorize: %v, want issuer %s named ci", az, b.Issuer)
	}
}
