package idp

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// DefaultIssuerName is the name of the primary issuer (Config.IssuerName)
// when none is given.
const DefaultIssuerName = "default"

// TrustedIssuer is a further issuer whose bearer tokens a Plugin accepts
// beside the primary one (Config's own issuer): another provider, another
// realm, or machine identities (GitHub Actions, Kubernetes service
// accounts). A token is routed by its exact iss claim, before any
// signature work, to the keys of the issuer it names, and checked with
// that issuer's audiences, algorithms and claim mapping; a key of one
// issuer never verifies a token that names another. Browser sign-in,
// sessions, the /auth routes and service tokens always use the primary
// issuer.
type TrustedIssuer struct {
	// Name identifies the issuer in User.IssuerName, RequireIssuers, logs
	// and metrics: letters, digits, '.', '_' and '-', at most 64 bytes,
	// unique, not Config.IssuerName. Required.
	Name string
	// IssuerURL is the issuer exactly as its discovery document and its
	// tokens spell it (see Config.IssuerURL). Required unless ServerURL
	// and Realm are set.
	IssuerURL string
	// ServerURL and Realm are the Keycloak shorthand for the issuer
	// ServerURL + "/realms/" + Realm (see Config.ServerURL).
	ServerURL, Realm string
	// Audiences are the accepted audiences: a token passes when its aud
	// holds one of them or its azp is one of them (the audience rule of
	// Config.Audience). At least one; required, since another issuer's
	// tokens name audiences of their own (GitHub Actions: the audience
	// the workflow asks for; Kubernetes: the projected token's audience).
	Audiences []string
	// Claims says where the identity is read from this issuer's tokens.
	// [the Keycloak preset]
	Claims ClaimMapping
	// Algorithms are the accepted signature algorithms. [RS256]
	Algorithms []string
	// JWKSCacheTTL is how long this issuer's keys are used before a
	// refresh. [Config.JWKSCacheTTL]
	JWKSCacheTTL time.Duration
	// UnknownKIDRefreshInterval is the least time between two refetches
	// of this issuer's keys caused by unknown kids: each issuer has its
	// own budget, so noise naming one issuer never delays a rotation at
	// another. [Config.UnknownKIDRefreshInterval]
	UnknownKIDRefreshInterval time.Duration
}

// Issuer returns the issuer URL the issuer's tokens must carry: IssuerURL
// when set, else ServerURL + "/realms/" + Realm.
func (t TrustedIssuer) Issuer() string {
	return Config{IssuerURL: t.IssuerURL, ServerURL: t.ServerURL, Realm: t.Realm}.Issuer()
}

// withDefaults fills in t's zero optional fields from c (defaults applied).
func (t TrustedIssuer) withDefaults(c Config) TrustedIssuer {
	t.ServerURL = strings.TrimRight(t.ServerURL, "/")
	t.Audiences = append([]string(nil), t.Audiences...)
	if len(t.Algorithms) == 0 {
		t.Algorithms = []string{"RS256"}
	} else {
		t.Algorithms = append([]string(nil), t.Algorithms...)
	}
	if t.JWKSCacheTTL == 0 {
		t.JWKSCacheTTL = c.JWKSCacheTTL
	}
	if t.UnknownKIDRefreshInterval == 0 {
		t.UnknownKIDRefreshInterval = c.UnknownKIDRefreshInterval
	}
	return t
}

// validIssuerName reports whether name may name an issuer: 1 to 64
// letters, digits, '.', '_' or '-' (it is a metrics label and a log field).
func validIssuerName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// IssuerConfigError is a problem of one entry of Config.Issuers: its
// index, the field concerned (its Go name in TrustedIssuer: "Name",
// "IssuerURL", "Audiences", "Claims", "Algorithms", ...) and the error,
// which wraps ErrConfig. Config.Validate reports each problem of
// Config.Issuers as one, so that a configuration file can point at the
// entry's line.
type IssuerConfigError struct {
	Index int
	Field string
	Err   error
}

func (e *IssuerConfigError) Error() string { return e.Err.Error() }
func (e *IssuerConfigError) Unwrap() error { return e.Err }

// validateIssuers reports the problems of c.IssuerName and c.Issuers
// (defaults applied) through bad, and as *IssuerConfigError in errs.
// mappings receives the claim mapping of each of c.Issuers.
func (c Config) validateIssuers(bad func(field, format string, args ...any), errs *[]error, mappings []*token.Mapping) {
	if !validIssuerName(c.IssuerName) {
		bad("issuer_name", "issuer_name %q: want 1 to 64 letters, digits, '.', '_' or '-'", c.IssuerName)
	}
	names := map[string]string{c.IssuerName: "issuer_name"}
	urls := map[string]string{c.Issuer(): "the primary issuer (" + c.IssuerName + ")"}
	for i, t := range c.Issuers {
		at := fmt.Sprintf("issuers[%d]", i)
		if t.Name != "" {
			at += " (" + t.Name + ")"
		}
		ibad := func(field, format string, args ...any) {
			*errs = append(*errs, &IssuerConfigError{Index: i, Field: goPath(reflect.TypeFor[TrustedIssuer](), field),
				Err: fmt.Errorf("%w: "+at+": "+format, append([]any{ErrConfig}, args...)...)})
		}
		switch {
		case t.Name == "":
			ibad("name", "name is required")
		case !validIssuerName(t.Name):
			ibad("name", "name %q: want 1 to 64 letters, digits, '.', '_' or '-'", t.Name)
		case names[t.Name] != "":
			ibad("name", "name %q is already the name of %s", t.Name, names[t.Name])
		default:
			names[t.Name] = fmt.Sprintf("issuers[%d]", i)
		}
		switch {
		case t.IssuerURL != "":
			if t.ServerURL != "" || t.Realm != "" {
				ibad("issuer_url", "issuer_url excludes server_url and realm: set one form")
			}
			if err := checkIssuerURL(t.IssuerURL); err != nil {
				ibad("issuer_url", "issuer_url: %v", err)
			}
		case t.ServerURL == "" && t.Realm == "":
			ibad("issuer_url", "issuer_url is required (or server_url and realm, a Keycloak realm)")
		default:
			Config{ServerURL: t.ServerURL, Realm: t.Realm}.checkRealmForm(ibad, ibad)
		}
		if t.IssuerURL != "" || t.ServerURL != "" && t.Realm != "" {
			iss := t.Issuer()
			field := "issuer_url"
			if t.IssuerURL == "" {
				field = "server_url"
			}
			if other, dup := urls[iss]; dup {
				ibad(field, "issuer %q is already trusted as %s: each issuer is listed once", iss, other)
			} else {
				urls[iss] = fmt.Sprintf("issuers[%d]", i)
			}
		}
		if len(t.Audiences) == 0 {
			ibad("audiences", "audiences is required: the aud values (or azp) this issuer's tokens carry for this service")
		}
		for _, a := range t.Audiences {
			if strings.TrimSpace(a) == "" {
				ibad("audiences", "audiences: an empty audience")
			}
		}
		var err error
		if mappings[i], err = t.Claims.compile(); err != nil {
			*errs = append(*errs, &IssuerConfigError{Index: i, Field: "Claims", Err: fmt.Errorf("%s: %w", at, err)})
		}
		checkAlgorithms(t.Algorithms, func(format string, args ...any) { ibad("algorithms", format, args...) })
		if t.JWKSCacheTTL < 0 {
			ibad("jwks_cache_ttl", "jwks_cache_ttl must be positive, got %s", t.JWKSCacheTTL)
		}
		if t.UnknownKIDRefreshInterval < 0 {
			ibad("unknown_kid_refresh_interval", "unknown_kid_refresh_interval must be positive, got %s", t.UnknownKIDRefreshInterval)
		}
	}
}

// checkAlgorithms reports the algorithms that may not be configured.
func checkAlgorithms(algs []string, bad func(format string, args ...any)) {
	for _, a := range algs {
		switch {
		case supportedAlgorithms[a]:
		case strings.HasPrefix(strings.ToUpper(a), "HS"):
			bad("algorithms: %q is symmetric; only asymmetric algorithms are accepted", a)
		case strings.EqualFold(a, "none"):
			bad("algorithms: %q is never accepted", a)
		default:
			bad("algorithms: %q is unknown (supported: RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA)", a)
		}
	}
}

// issuer is one trusted issuer as the Plugin verifies its tokens: its
// own keys (and key-selection budget), audiences, algorithms and claim
// mapping.
type issuer struct {
	name      string
	url       string
	audiences map[string]struct{}
	methods   map[string]jwt.SigningMethod
	mapping   *token.Mapping // nil for the Keycloak preset as is
	keys      *keySet
}

// newIssuer builds an issuer; keys is the issuer's key set, mapping its
// compiled claim mapping (Compile).
func newIssuer(name, url string, audiences []string, algs []string, mapping *token.Mapping, keys *keySet) (*issuer, error) {
	if err := keys.openStore(); err != nil {
		return nil, err
	}
	is := &issuer{
		name:      name,
		url:       url,
		audiences: make(map[string]struct{}, len(audiences)),
		methods:   signingMethods(algs),
		mapping:   mapping,
		keys:      keys,
	}
	for _, a := range audiences {
		if a != "" {
			is.audiences[a] = struct{}{}
		}
	}
	return is, nil
}

// route returns the trusted issuer a token's payload names in its iss
// claim, matched byte for byte, before any signature work: a token that
// names no issuer k accepts (any trusted one, or the primary alone) is
// refused here and costs no key fetch.
func (p *Plugin) route(payload []byte, k *tokenKind) (*issuer, error) {
	iss, ok := token.IssuerOf(payload)
	if !ok {
		if _, err := token.DecodeClaims(nil, payload); err != nil {
			return nil, err
		}
		return nil, invalid(k.missingIss, nil)
	}
	if p.byURL == nil || !k.anyIssuer {
		if string(iss) == p.primary.url {
			return p.primary, nil
		}
	} else if is, ok := p.byURL[string(iss)]; ok {
		return is, nil
	}
	if k.anyIssuer {
		p.unknownIssuers.Add(1)
	}
	return nil, invalid("wrong issuer", nil)
}

// issuerOfPayload returns the issuer of a payload verified before (the
// cache's), nil when it names none (the configuration cannot change, so
// this does not happen).
func (p *Plugin) issuerOfPayload(payload []byte) *issuer {
	if p.byURL == nil {
		return p.primary
	}
	iss, _ := token.IssuerOf(payload)
	return p.byURL[string(iss)]
}

// IssuerStats describes one trusted issuer's keys.
type IssuerStats struct {
	Name   string // Config.IssuerName or TrustedIssuer.Name
	Issuer string // the issuer URL
	Keys   KeyStats
}

// IssuerNames returns the names of the trusted issuers, the primary
// (Config.IssuerName) first.
func (p *Plugin) IssuerNames() []string {
	out := make([]string, len(p.issuers))
	for i, is := range p.issuers {
		out[i] = is.name
	}
	return out
}

type issuersGuard struct{ names []string }

// RequireIssuers admits the users whose token came from one of the named
// issuers (User.IssuerName: Config.IssuerName or a TrustedIssuer's Name).
// It panics when no name is given, as the other guards do.
func RequireIssuers(names ...string) Guard {
	if len(names) == 0 {
		panic("idp: RequireIssuers needs at least one issuer name")
	}
	for _, n := range names {
		if n == "" {
			panic("idp: RequireIssuers: empty issuer name")
		}
	}
	return issuersGuard{names: append([]string(nil), names...)}
}

func (g issuersGuard) Allow(u *User) bool { return u != nil && contains(g.names, u.IssuerName) }

// String describes the guard, e.g. "issuers(any: default, ci)".
func (g issuersGuard) String() string { return "issuers(any: " + strings.Join(g.names, ", ") + ")" }

// Clause names the guard in refusals: "issuers" (see NamedGuard).
func (issuersGuard) Clause() string { return "issuers" }
