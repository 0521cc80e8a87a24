package idp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// ciAudience is the audience the second issuer's tokens carry.
const ciAudience = "https://github.com/example-org"

// twoIssuers starts a Keycloak realm (the primary issuer) and a plain,
// generic-shaped provider trusted as "ci", and a plugin trusting both;
// edit adjusts the second issuer's entry.
func twoIssuers(t *testing.T, edit func(*idp.TrustedIssuer)) (a, b *idptest.Server, p *idp.Plugin) {
	t.Helper()
	a = idptest.NewServer(t)
	b = idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	p = newPlugin(t, a, func(c *idp.Config) {
		ti := idp.TrustedIssuer{
			Name:      "ci",
			IssuerURL: b.Issuer,
			Audiences: []string{ciAudience},
			Claims:    idp.ClaimMapping{Preset: idp.PresetGeneric},
		}
		if edit != nil {
			edit(&ti)
		}
		c.Issuers = []idp.TrustedIssuer{ti}
	})
	return a, b, p
}

// fetches is the number of discovery and JWKS requests a and b served.
func fetches(a, b *idptest.Server) int {
	return a.JWKSFetches() + a.DiscoveryFetches() + b.JWKSFetches() + b.DiscoveryFetches()
}

func TestTrustedIssuersRouteByIss(t *testing.T) {
	a, b, p := twoIssuers(t, nil)
	ctx := verifyCtx(t)

	ua, err := verifyUser(t, p, a.Mint(a.UserClaims(clientID, "alice", "creator")))
	if err != nil || ua.IssuerName != idp.DefaultIssuerName || !ua.HasRealmRole("creator") {
		t.Fatalf("primary issuer's token: %+v, %v", ua, err)
	}
	ub, err := verifyUser(t, p, b.Mint(b.GenericClaims(ciAudience, "deploy-bot", "deployer")))
	if err != nil || ub.IssuerName != "ci" || !ub.HasRealmRole("deployer") || ub.PreferredUsername != "deploy-bot" {
		t.Fatalf("second issuer's token (generic claims): %+v, %v", ub, err)
	}

	// Audiences are the issuer's own: neither issuer's tokens pass with
	// the other's audience.
	for name, tok := range map[string]string{
		"ci token for the client":         b.Mint(b.GenericClaims(clientID, "x")),
		"primary token for ci's audience": a.Mint(map[string]any{"aud": ciAudience}),
	} {
		if _, err := p.Verify(ctx, tok); !errors.Is(err, idp.ErrInvalidToken) {
			t.Errorf("%s: %v, want ErrInvalidToken", name, err)
		}
	}

	// RequireIssuers admits only the named issuers' tokens.
	h := &okHandler{}
	deploy := p.Require(idp.RequireIssuers("ci"))(h)
	if rec := do(t, deploy, "GET", "/deploy", "Authorization", "Bearer "+b.Mint(b.GenericClaims(ciAudience, "bot"))); rec.Code != http.StatusOK {
		t.Errorf("ci token on a ci-only route: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, deploy, "GET", "/deploy", "Authorization", "Bearer "+a.Mint(a.UserClaims(clientID, "alice"))); rec.Code != http.StatusForbidden {
		t.Errorf("primary token on a ci-only route: %d, want 403", rec.Code)
	}
	if h.calls != 1 {
		t.Errorf("handler reached %d times, want 1", h.calls)
	}

	st := p.Stats()
	if len(st.Issuers) != 2 || st.Issuers[0].Name != "default" || st.Issuers[1].Name != "ci" ||
		st.Issuers[1].Issuer != b.Issuer || !st.Issuers[1].Keys.Ready || st.Issuers[1].Keys.Keys == 0 {
		t.Errorf("Stats().Issuers = %+v", st.Issuers)
	}
	if got := p.IssuerNames(); len(got) != 2 || got[0] != "default" || got[1] != "ci" {
		t.Errorf("IssuerNames = %v", got)
	}
}

// A key of one issuer never verifies a token that names the other,
// whatever the kid says, and the forgery costs no fetch.
func TestTrustedIssuersForgedKID(t *testing.T) {
	a, b, p := twoIssuers(t, nil)
	ctx := verifyCtx(t)
	aKID, _ := a.KID()
	bKID, _ := b.KID()
	before := fetches(a, b)
	ciClaims := b.GenericClaims(ciAudience, "bot")
	ciClaims["iss"] = b.Issuer // MintWith's default is the signer's issuer
	forged := map[string]string{
		// names ci, signed with the primary's key under ci's kid
		"ci named, primary's key, ci's kid": a.MintWith(idptest.MintOptions{KID: bKID}, ciClaims),
		// names ci, signed with the primary's key under the primary's kid
		"ci named, primary's key and kid": a.MintWith(idptest.MintOptions{KID: aKID}, map[string]any{
			"iss": b.Issuer, "aud": ciAudience, "typ": nil, "roles": []any{"deployer"}}),
		// names the primary, signed with ci's key under the primary's kid
		"primary named, ci's key, primary's kid": b.MintWith(idptest.MintOptions{KID: aKID}, map[string]any{
			"iss": a.Issuer, "aud": clientID, "typ": "Bearer"}),
	}
	for name, tok := range forged {
		if _, err := p.Verify(ctx, tok); !errors.Is(err, idp.ErrInvalidToken) || idp.Reason(err) != "invalid signature" &&
			idp.Reason(err) != "unknown signing key" {
			t.Errorf("%s: %v (%q), want an invalid signature", name, err, idp.Reason(err))
		}
	}
	if after := fetches(a, b); after-before > 1 {
		// The primary's kid is unknown to ci: at most ci's one unknown-kid refetch.
		t.Errorf("forged tokens caused %d fetches (a %d+%d, b %d+%d)", after-before, a.JWKSFetches(), a.DiscoveryFetches(), b.JWKSFetches(), b.DiscoveryFetches())
	}
}

// iss must name a trusted issuer byte for byte; any other is refused
// before signature work, with no fetch, even with an unknown kid.
func TestTrustedIssuersExactIss(t *testing.T) {
	a, b, p := twoIssuers(t, nil)
	ctx := verifyCtx(t)
	u, _ := url.Parse(b.Issuer)
	before := fetches(a, b)
	for _, iss := range []string{
		b.Issuer + "/",
		strings.ToUpper(u.Scheme) + "://" + u.Host,
		b.Issuer + " ", " " + b.Issuer, "\t" + b.Issuer, b.Issuer + "\n",
		strings.Replace(b.Issuer, "127.0.0.1", "localhost", 1),
		a.Issuer + "/", strings.ToUpper(a.Issuer),
	} {
		claims := b.GenericClaims(ciAudience, "bot")
		claims["iss"] = iss
		tok := b.MintWith(idptest.MintOptions{KID: "kid-" + iss}, claims)
		if _, err := p.Verify(ctx, tok); !errors.Is(err, idp.ErrInvalidToken) || idp.Reason(err) != "wrong issuer" {
			t.Errorf("iss %q: %v, want wrong issuer", iss, err)
		}
	}
	if after := fetches(a, b); after != before {
		t.Errorf("tokens of untrusted issuers caused %d fetches", after-before)
	}
}

// A flood of tokens naming unknown issuers (with unknown kids) costs the
// trusted providers nothing.
func TestTrustedIssuersUnknownFlood(t *testing.T) {
	a, b, p := twoIssuers(t, nil)
	before := fetches(a, b)
	h := p.Middleware(&okHandler{})
	for i := range 1000 {
		claims := b.GenericClaims(ciAudience, "bot")
		claims["iss"] = fmt.Sprintf("https://issuer-%d.example", i)
		tok := b.MintWith(idptest.MintOptions{KID: fmt.Sprintf("k%d", i)}, claims)
		if rec := do(t, h, "GET", "/", "Authorization", "Bearer "+tok); rec.Code != http.StatusUnauthorized {
			t.Fatalf("token %d: %d, want 401", i, rec.Code)
		}
	}
	if after := fetches(a, b); after != before {
		t.Errorf("1000 unknown issuers caused %d fetches", after-before)
	}
	if n := p.Stats().UnknownIssuers; n != 1000 {
		t.Errorf("Stats().UnknownIssuers = %d, want 1000", n)
	}
}

// A second issuer whose discovery names another issuer is refused: its
// tokens get 503 (its keys are not available), the primary's keep
// working, and the plugin is not ready.
func TestTrustedIssuerDiscoveryRefused(t *testing.T) {
	a := idptest.NewServer(t)
	b := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Discovery: func(doc map[string]any) {
		doc["issuer"] = "https://evil.example"
	}})
	p, err := idp.New(t.Context(), idp.Config{ServerURL: a.URL, Realm: a.Realm, ClientID: clientID,
		Issuers: []idp.TrustedIssuer{{Name: "ci", IssuerURL: b.Issuer, Audiences: []string{ciAudience}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = p.Refresh(ctx)
	if !errors.Is(err, idp.ErrDiscovery) || !strings.Contains(err.Error(), "issuer ci") || !strings.Contains(err.Error(), "evil.example") {
		t.Fatalf("Refresh = %v, want ErrDiscovery of issuer ci naming the other issuer", err)
	}
	if p.Ready() {
		t.Error("Ready with an issuer whose keys are not loaded")
	}
	if _, err := p.Verify(ctx, a.Mint(a.UserClaims(clientID, "alice"))); err != nil {
		t.Errorf("primary token: %v", err)
	}
	claims := b.UserClaims(ciAudience, "bot")
	if _, err := p.Verify(ctx, b.Mint(claims)); !errors.Is(err, idp.ErrUnavailable) {
		t.Errorf("token of the refused issuer: %v, want ErrUnavailable", err)
	}
	if st := p.Stats().Issuers[1]; st.Keys.Ready || st.Keys.Failures == 0 {
		t.Errorf("refused issuer's stats: %+v", st)
	}
}

// Each issuer keeps its own algorithms.
func TestTrustedIssuerAlgorithms(t *testing.T) {
	a, b, p := twoIssuers(t, func(ti *idp.TrustedIssuer) { ti.Algorithms = []string{"ES256"} })
	ctx := verifyCtx(t)
	if _, err := p.Verify(ctx, b.MintWith(idptest.MintOptions{Alg: "ES256"}, b.GenericClaims(ciAudience, "bot"))); err != nil {
		t.Errorf("ES256 token of ci: %v", err)
	}
	if _, err := p.Verify(ctx, b.Mint(b.GenericClaims(ciAudience, "bot"))); idp.Reason(err) != "unsupported algorithm" {
		t.Errorf("RS256 token of ci: %v, want unsupported algorithm", err)
	}
	if _, err := p.Verify(ctx, a.MintWith(idptest.MintOptions{Alg: "ES256"}, a.UserClaims(clientID, "alice"))); idp.Reason(err) != "unsupported algorithm" {
		t.Errorf("ES256 token of the primary (RS256 only): %v, want unsupported algorithm", err)
	}
}

func TestTrustedIssuersConfig(t *testing.T) {
	base := func() idp.Config {
		return idp.Config{ServerURL: "https://sso.example.com", Realm: "demo", ClientID: clientID}
	}
	ok := idp.TrustedIssuer{Name: "ci", IssuerURL: "https://token.actions.githubusercontent.com", Audiences: []string{"a"}}
	tests := []struct {
		name    string
		edit    func(c *idp.Config)
		want    string
		wantNil bool
	}{
		{"valid", func(c *idp.Config) { c.Issuers = []idp.TrustedIssuer{ok} }, "", true},
		{"keycloak shorthand", func(c *idp.Config) {
			c.Issuers = []idp.TrustedIssuer{{Name: "other", ServerURL: "https://sso.example.com", Realm: "other", Audiences: []string{"a"}}}
		}, "", true},
		{"no name", func(c *idp.Config) { t := ok; t.Name = ""; c.Issuers = []idp.TrustedIssuer{t} }, "issuers[0]: name is required", false},
		{"bad name", func(c *idp.Config) { t := ok; t.Name = "c i"; c.Issuers = []idp.TrustedIssuer{t} }, `name "c i"`, false},
		{"name of the primary", func(c *idp.Config) { t := ok; t.Name = "default"; c.Issuers = []idp.TrustedIssuer{t} }, `"default" is already the name of issuer_name`, false},
		{"duplicate name", func(c *idp.Config) {
			t2 := ok
			t2.IssuerURL = "https://other.example"
			c.Issuers = []idp.TrustedIssuer{ok, t2}
		}, `issuers[1] (ci): name "ci" is already the name of issuers[0]`, false},
		{"duplicate issuer", func(c *idp.Config) { t2 := ok; t2.Name = "ci2"; c.Issuers = []idp.TrustedIssuer{ok, t2} }, "is already trusted as issuers[0]", false},
		{"the primary again", func(c *idp.Config) {
			t := ok
			t.IssuerURL = "https://sso.example.com/realms/demo"
			c.Issuers = []idp.TrustedIssuer{t}
		}, "already trusted as the primary issuer (default)", false},
		{"no issuer", func(c *idp.Config) { t := ok; t.IssuerURL = ""; c.Issuers = []idp.TrustedIssuer{t} }, "issuer_url is required", false},
		{"both forms", func(c *idp.Config) { t := ok; t.Realm = "x"; c.Issuers = []idp.TrustedIssuer{t} }, "excludes server_url and realm", false},
		{"no audiences", func(c *idp.Config) { t := ok; t.Audiences = nil; c.Issuers = []idp.TrustedIssuer{t} }, "audiences is required", false},
		{"HS256", func(c *idp.Config) { t := ok; t.Algorithms = []string{"HS256"}; c.Issuers = []idp.TrustedIssuer{t} }, `issuers[0] (ci): algorithms: "HS256" is symmetric`, false},
		{"bad claim path", func(c *idp.Config) {
			t := ok
			t.Claims = idp.ClaimMapping{Roles: "a..b"}
			c.Issuers = []idp.TrustedIssuer{t}
		}, "issuers[0] (ci): idp: invalid config: claims.roles", false},
		{"bad issuer_name", func(c *idp.Config) { c.IssuerName = "the primary" }, `issuer_name "the primary"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.edit(&c)
			err := c.Validate()
			if tt.wantNil {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, idp.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want ErrConfig containing %q", err, tt.want)
			}
		})
	}
	// Each problem of an entry names its index and field.
	c0 := base()
	c0.Issuers = []idp.TrustedIssuer{ok, {Name: "k8s", IssuerURL: "https://k8s.example"}}
	var ice *idp.IssuerConfigError
	if err := c0.Validate(); !errors.As(err, &ice) || ice.Index != 1 || ice.Field != "Audiences" {
		t.Errorf("Validate = %v, want an IssuerConfigError of Issuers[1].Audiences", err)
	}
	// Defaults: the primary's name, and the issuer's from the Config.
	c := base()
	c.JWKSCacheTTL = time.Minute
	c.Issuers = []idp.TrustedIssuer{ok}
	d := c.WithDefaults()
	if d.IssuerName != "default" || d.Issuers[0].JWKSCacheTTL != time.Minute || d.Issuers[0].Algorithms[0] != "RS256" ||
		d.Issuers[0].UnknownKIDRefreshInterval != idp.DefaultUnknownKIDRefreshInterval {
		t.Errorf("WithDefaults: %q %+v", d.IssuerName, d.Issuers[0])
	}
}

// Each issuer has its own budget of unknown-kid refetches: noise naming
// one issuer never delays a key rotation at another.
func TestTrustedIssuersOwnRefetchBudgets(t *testing.T) {
	a := idptest.NewServer(t)
	b := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	hour := func(c *idp.Config) {
		c.UnknownKIDRefreshInterval = time.Hour
		c.Issuers = []idp.TrustedIssuer{{Name: "ci", IssuerURL: b.Issuer, Audiences: []string{ciAudience},
			Claims: idp.ClaimMapping{Preset: idp.PresetGeneric}}}
	}
	p := newPlugin(t, a, hour)
	ctx := verifyCtx(t)
	claims := b.GenericClaims(ciAudience, "bot")
	claims["iss"] = b.Issuer
	// ci's budget (one refetch an hour) spent on a kid it does not have.
	if _, err := p.Verify(ctx, b.MintWith(idptest.MintOptions{KID: "noise-1"}, claims)); err == nil {
		t.Fatal("a token with a kid ci never published verified")
	}
	bFetches := b.JWKSFetches()
	if _, err := p.Verify(ctx, b.MintWith(idptest.MintOptions{KID: "noise-2"}, claims)); err == nil {
		t.Fatal("a token with a kid ci never published verified")
	}
	if n := b.JWKSFetches(); n != bFetches {
		t.Errorf("ci's spent budget allowed %d more fetches", n-bFetches)
	}
	// The primary rotates: its own budget is untouched, so the new key is
	// fetched at once.
	a.RotateKey()
	if _, err := p.Verify(ctx, a.Mint(a.UserClaims(clientID, "alice"))); err != nil {
		t.Fatalf("a token under the primary's new key: %v", err)
	}
}

// With several issuers, browser sign-in still goes to the primary issuer.
func TestTrustedIssuersSignInUsesThePrimary(t *testing.T) {
	b := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	e := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) {
		c.Issuers = []idp.TrustedIssuer{{Name: "ci", IssuerURL: b.Issuer, Audiences: []string{ciAudience}}}
	})
	authURL := e.startLogin(t, "")
	if !strings.HasPrefix(authURL.String(), e.idp.AuthURL()) {
		t.Fatalf("login redirects to %s, want the primary's %s", authURL, e.idp.AuthURL())
	}
	doc := decodeDoc(t, e.get(t, e.authorize(t, authURL)))
	u, err := verifyUser(t, e.p, doc.AccessToken)
	if err != nil || u.IssuerName != idp.DefaultIssuerName {
		t.Fatalf("signed-in user: %+v, %v", u, err)
	}
}
