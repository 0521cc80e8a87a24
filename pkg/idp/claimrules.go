package idp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/directmap"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// ClaimKind is the JSON type of a ClaimValue.
type ClaimKind uint8

// Claim value kinds.
const (
	ClaimString ClaimKind = ClaimKind(token.KindString)
	ClaimBool   ClaimKind = ClaimKind(token.KindBool)
	ClaimNumber ClaimKind = ClaimKind(token.KindNumber)
)

// String returns "string", "boolean" or "number".
func (k ClaimKind) String() string {
	switch k {
	case ClaimString:
		return "string"
	case ClaimBool:
		return "boolean"
	case ClaimNumber:
		return "number"
	}
	return "ClaimKind(" + strconv.Itoa(int(k)) + ")"
}

// ClaimValue is a string, boolean or number of a claim, as claim rules
// compare it: two values are equal when their Kind and Text are. Text is
// the string itself, "true" or "false", or the number's canonical form
// (CanonicalNumber), so 1, 1.0 and 1e0 are one value, the string "1"
// another, and the boolean true a third.
type ClaimValue struct {
	Kind ClaimKind
	Text string
}

// CanonicalNumber returns the spelling that every JSON number of the same
// decimal value shares: numbers are compared exactly, as decimals, never
// through float64, so 1, 1.0, 10e-1 and 1e0 are equal and
// 9007199254740993 differs from 9007199254740992. The form is the
// integer when the value is one of at most 21 digits ("100", "-3"), a
// decimal fraction when it needs at most five zeros after the point
// ("12.5", "0.001"), otherwise the exponent form ("1.5e+30", "1e-7");
// never "-0". s must follow JSON's grammar (no "+1", "01", ".5" or
// "1."), and an exponent of more than nine digits is refused.
func CanonicalNumber(s string) (string, error) {
	c, err := token.CanonicalNumber(s)
	if err != nil {
		return "", fmt.Errorf("idp: number %q: %w", s, err)
	}
	return c, nil
}

// ClaimValues reads the claim at path as claim rules read it: a string,
// boolean or number is one value, an array gives its elements, and a
// keys(...) path gives the object's member names as strings. An absent or
// null claim gives none. A claim of another shape (an object, an array
// holding one or holding an array or null) is an error wrapping
// ErrClaimType; a path crossing a value that is not an object is an
// ErrInvalidToken.
func (p *TokenPayload) ClaimValues(path ClaimPath) ([]ClaimValue, error) {
	raw, err := token.Lookup(p.Raw, path.p)
	if err != nil || raw == nil {
		return nil, err
	}
	if path.p.Keys {
		keys, err := token.Keys(raw, path.p)
		if err != nil {
			return nil, fmt.Errorf("idp: claim %s: %w", path, ErrClaimType)
		}
		out := make([]ClaimValue, len(keys))
		for i, k := range keys {
			out[i] = ClaimValue{Kind: ClaimString, Text: k}
		}
		return out, nil
	}
	vals, ok := token.Values(raw)
	if !ok {
		return nil, fmt.Errorf("idp: claim %s: %w", path, ErrClaimType)
	}
	out := make([]ClaimValue, len(vals))
	for i, v := range vals {
		out[i] = ClaimValue{Kind: ClaimKind(v.Kind), Text: v.Text}
	}
	return out, nil
}

// claimValueOf converts a Go value to the ClaimValue a claim rule
// compares: a string (not empty), a bool, any integer type, a finite
// float32 or float64 (its shortest decimal spelling, so 0.1 is the JSON
// number 0.1), a json.Number, or a ClaimValue.
func claimValueOf(v any) (ClaimValue, error) {
	switch x := v.(type) {
	case ClaimValue:
		if x.Kind < ClaimString || x.Kind > ClaimNumber {
			return ClaimValue{}, fmt.Errorf("idp: claim value of unknown kind %d", x.Kind)
		}
		if x.Kind == ClaimNumber {
			return claimValueOf(json.Number(x.Text))
		}
		if x.Kind == ClaimBool && x.Text != "true" && x.Text != "false" {
			return ClaimValue{}, fmt.Errorf("idp: boolean claim value %q: want true or false", x.Text)
		}
		if x.Text == "" {
			return ClaimValue{}, errors.New("idp: empty claim value")
		}
		return x, nil
	case string:
		if x == "" {
			return ClaimValue{}, errors.New("idp: empty claim value")
		}
		return ClaimValue{Kind: ClaimString, Text: x}, nil
	case bool:
		return ClaimValue{Kind: ClaimBool, Text: strconv.FormatBool(x)}, nil
	case json.Number:
		c, err := CanonicalNumber(string(x))
		return ClaimValue{Kind: ClaimNumber, Text: c}, err
	case float64:
		return floatValue(x, 64)
	case float32:
		return floatValue(float64(x), 32)
	case int:
		return intValue(int64(x))
	case int8:
		return intValue(int64(x))
	case int16:
		return intValue(int64(x))
	case int32:
		return intValue(int64(x))
	case int64:
		return intValue(x)
	case uint:
		return uintValue(uint64(x))
	case uint8:
		return uintValue(uint64(x))
	case uint16:
		return uintValue(uint64(x))
	case uint32:
		return uintValue(uint64(x))
	case uint64:
		return uintValue(x)
	}
	return ClaimValue{}, fmt.Errorf("idp: claim value %v of type %T: want a string, bool or number", v, v)
}

func intValue(n int64) (ClaimValue, error) {
	return ClaimValue{Kind: ClaimNumber, Text: strconv.FormatInt(n, 10)}, nil
}

func uintValue(n uint64) (ClaimValue, error) {
	return ClaimValue{Kind: ClaimNumber, Text: strconv.FormatUint(n, 10)}, nil
}

func floatValue(f float64, bits int) (ClaimValue, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return ClaimValue{}, fmt.Errorf("idp: claim value %v is not a JSON number", f)
	}
	return claimValueOf(json.Number(strconv.FormatFloat(f, 'g', -1, bits)))
}

// ClaimRule is one clause of a claims guard: the claim at Path (a claim
// path, see ClaimPath) must hold one of Values: strings (not empty),
// bools, integers of any type, finite float32 or float64 values (their
// shortest decimal spelling, so 0.1 is the JSON number 0.1), json.Number
// values or ClaimValues. A claim that is an array matches when one of its elements
// does; a claim that is absent, null, or of another shape never matches.
type ClaimRule struct {
	Path   string
	Values []any
}

// NewClaimsGuard returns a guard on arbitrary claims: with MatchAll every
// rule must match, with MatchAny one. Within a rule, the values are
// alternatives: {Path: "tid", Values: {"t1", "t2"}} admits either tenant.
// Strings, booleans and numbers are compared exactly, with their type
// (the string "true" is not the boolean true; numbers as CanonicalNumber
// compares them). A refusal names its clause "claims:<path>" (MatchAll:
// the first rule that failed) or "claims" (MatchAny: none matched). The
// error names the first rule that is invalid: no rule, a path that does
// not parse or is given twice, no values, or a value of another Go type
// than ClaimRule lists.
func NewClaimsGuard(s MatchStrategy, rules ...ClaimRule) (Guard, error) {
	if s != MatchAll && s != MatchAny {
		return nil, fmt.Errorf("idp: unknown MatchStrategy %d", int(s))
	}
	if len(rules) == 0 {
		return nil, errors.New("idp: a claims guard needs at least one claim")
	}
	g := &claimsGuard{strategy: s, memo: directmap.Make[claimsJudgement](claimsMemoSlots)}
	seen := map[string]bool{}
	for _, r := range rules {
		p, err := ParseClaimPath(r.Path)
		if err != nil {
			return nil, fmt.Errorf("idp: claims: %w", err)
		}
		if seen[r.Path] {
			return nil, fmt.Errorf("idp: claims: claim %q given twice", r.Path)
		}
		seen[r.Path] = true
		if len(r.Values) == 0 {
			return nil, fmt.Errorf("idp: claims: claim %q has no accepted values", r.Path)
		}
		cr := claimRule{path: p, clause: "claims:" + r.Path}
		for _, v := range r.Values {
			cv, err := claimValueOf(v)
			if err != nil {
				return nil, fmt.Errorf("idp: claims: claim %q: %w", r.Path, err)
			}
			cr.values = append(cr.values, cv)
			cr.wants = append(cr.wants, token.Value{Kind: token.Kind(cv.Kind), Text: cv.Text})
		}
		g.rules = append(g.rules, cr)
	}
	return g, nil
}

// RequireClaim requires the claim at path to hold one of values (see
// NewClaimsGuard). It panics on an invalid path or value: that is a
// programming error, like an invalid ServeMux pattern.
func RequireClaim(path string, values ...any) Guard {
	return RequireClaims(MatchAll, ClaimRule{Path: path, Values: values})
}

// RequireClaims requires the claims rules with strategy s (see
// NewClaimsGuard). It panics on an invalid rule.
func RequireClaims(s MatchStrategy, rules ...ClaimRule) Guard {
	g, err := NewClaimsGuard(s, rules...)
	if err != nil {
		panic(err)
	}
	return g
}

type claimRule struct {
	path   ClaimPath
	clause string
	values []ClaimValue
	wants  []token.Value // values, as token.Match compares them
}

type claimsGuard struct {
	strategy MatchStrategy
	rules    []claimRule
	// memo keeps the judgement of recent payloads: the hot-token table
	// hands the same *TokenPayload to every request with that token, so
	// a repeated token is judged once, not parsed again per request.
	memo directmap.Table[claimsJudgement]
}

type claimsJudgement struct {
	p      *TokenPayload
	clause string // "" when allowed
}

const claimsMemoSlots = 256

// Allow refuses: a claims guard needs the verified claims, which Authorize
// (and Require, Middleware, pkg/proxy) give it through Judge.
func (g *claimsGuard) Allow(*User) bool { return false }

// Clause returns "claims".
func (g *claimsGuard) Clause() string { return "claims" }

// Judge applies the rules to id's claims.
func (g *claimsGuard) Judge(id *Identity) (string, bool) {
	if id == nil || id.Payload == nil {
		return "claims", false
	}
	slot := directmap.Comparable(&g.memo, id.Payload)
	if j := slot.Load(); j != nil && j.p == id.Payload {
		return j.clause, j.clause == ""
	}
	clause := g.judge(id.Payload)
	slot.Store(&claimsJudgement{p: id.Payload, clause: clause})
	return clause, clause == ""
}

func (g *claimsGuard) judge(p *TokenPayload) string {
	for _, r := range g.rules {
		ok := r.matches(p)
		if ok && g.strategy == MatchAny {
			return ""
		}
		if !ok && g.strategy == MatchAll {
			return r.clause
		}
	}
	if g.strategy == MatchAny {
		return "claims"
	}
	return ""
}

// matches reads the claim as ClaimValues does, without building the
// values for a plain path.
func (r *claimRule) matches(p *TokenPayload) bool {
	if !r.path.p.Keys {
		raw, err := token.Lookup(p.Raw, r.path.p)
		return err == nil && raw != nil && token.Match(raw, r.wants)
	}
	have, err := p.ClaimValues(r.path)
	if err != nil {
		return false
	}
	for _, h := range have {
		for _, want := range r.values {
			if h == want {
				return true
			}
		}
	}
	return false
}

// String describes the guard, e.g. `claims(all: tid in ["t1"], admin in [true])`.
func (g *claimsGuard) String() string {
	parts := make([]string, len(g.rules))
	for i, r := range g.rules {
		vals := make([]string, len(r.values))
		for j, v := range r.values {
			if v.Kind == ClaimString {
				vals[j] = strconv.Quote(v.Text)
			} else {
				vals[j] = v.Text
			}
		}
		parts[i] = r.path.String() + " in [" + strings.Join(vals, ", ") + "]"
	}
	return "claims(" + g.strategy.String() + ": " + strings.Join(parts, ", ") + ")"
}

// NewEmailDomainsGuard returns a guard that admits a user whose e-mail
// address (User.Email, as the claim mapping reads it) is in one of
// domains, and only when the token's email_verified claim is true: an
// address the provider has not verified proves nothing about its domain.
// The domain is the part after the address's last '@', compared with
// each domain exactly, ASCII letters case-insensitively as DNS compares
// them: "corp.example.com" admits alice@Corp.Example.COM but neither
// alice@evil-corp.example.com nor alice@sub.corp.example.com (list
// subdomains one by one). Domains are written in ASCII (an
// internationalized domain as its xn-- form), without a leading '@' or
// '.', wildcard or trailing dot. A refusal names its clause
// "email_domains". The strategy of a rule does not apply: an address has
// one domain, so the domains are always alternatives.
func NewEmailDomainsGuard(domains ...string) (Guard, error) {
	if len(domains) == 0 {
		return nil, errors.New("idp: an email domains guard needs at least one domain")
	}
	g := emailDomainsGuard{domains: make([]string, 0, len(domains))}
	for _, d := range domains {
		if err := checkDomain(d); err != nil {
			return nil, err
		}
		g.domains = append(g.domains, strings.ToLower(d))
	}
	return g, nil
}

// RequireEmailDomains is NewEmailDomainsGuard that panics on an invalid
// domain: that is a programming error, like an invalid ServeMux pattern.
func RequireEmailDomains(domains ...string) Guard {
	g, err := NewEmailDomainsGuard(domains...)
	if err != nil {
		panic(err)
	}
	return g
}

// checkDomain accepts a DNS name of ASCII letters, digits and hyphens in
// non-empty labels of at most 63 bytes.
func checkDomain(d string) error {
	bad := func(why string) error { return fmt.Errorf("idp: email domain %q: %s", d, why) }
	switch {
	case d == "":
		return bad("empty")
	case len(d) > 253:
		return bad("longer than 253 bytes")
	case strings.HasPrefix(d, "@"):
		return bad("write the domain without '@'")
	case strings.HasPrefix(d, "*") || strings.HasPrefix(d, "."):
		return bad("no wildcards or suffixes: list each domain exactly")
	case strings.HasSuffix(d, "."):
		return bad("write it without the trailing dot")
	}
	for label := range strings.SplitSeq(d, ".") {
		if label == "" {
			return bad("empty label")
		}
		if len(label) > 63 {
			return bad("a label longer than 63 bytes")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			case c == '-' && i > 0 && i < len(label)-1:
			case c >= 0x80:
				return bad("not ASCII: write an internationalized domain in its xn-- form")
			default:
				return bad(fmt.Sprintf("%q is not a letter, digit or inner hyphen", c))
			}
		}
	}
	return nil
}

type emailDomainsGuard struct{ domains []string }

// Allow refuses: the guard needs email_verified, which Authorize gives it
// through Judge.
func (emailDomainsGuard) Allow(*User) bool { return false }

// Clause returns "email_domains".
func (emailDomainsGuard) Clause() string { return "email_domains" }

// Judge admits a verified address in one of the domains.
func (g emailDomainsGuard) Judge(id *Identity) (string, bool) {
	if id == nil || id.User == nil || id.Payload == nil || !id.Payload.EmailVerified {
		return "email_domains", false
	}
	email := id.User.Email
	at := strings.LastIndexByte(email, '@')
	if at <= 0 {
		return "email_domains", false
	}
	domain := email[at+1:]
	for _, d := range g.domains {
		if asciiEqualFold(domain, d) {
			return "", true
		}
	}
	return "email_domains", false
}

// asciiEqualFold compares s with the lower-case ASCII t, folding only
// ASCII letters of s (strings.EqualFold would also fold the Kelvin sign
// to 'k').
func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != t[i] {
			return false
		}
	}
	return true
}

// String describes the guard, e.g. "email_domains(example.com, example.org)".
func (g emailDomainsGuard) String() string {
	return "email_domains(" + strings.Join(g.domains, ", ") + ")"
}
