package idp_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// identityOf builds the identity of a payload given as JSON, as the
// verifier would hand it to a guard.
func identityOf(t testing.TB, payload string, email string, verified bool) *idp.Identity {
	t.Helper()
	return &idp.Identity{
		User:    &idp.User{Sub: "s", Email: email},
		Payload: &idp.TokenPayload{Raw: json.RawMessage(payload), EmailVerified: verified},
	}
}

func judge(g idp.Guard, id *idp.Identity) (string, bool) {
	return g.(idp.IdentityGuard).Judge(id)
}

func TestClaimsGuardMatrix(t *testing.T) {
	payload := `{"tid":"t1","groups":["eng","ops"],"level":3,"ratio":0.5,"admin":true,"big":9007199254740993,
		"nested":{"org":{"id":"o1"}},"https://example.com/tier":"gold","obj":{"a":1},"mixed":["x",{"y":1}],"nul":null,
		"roles":{"reader":{},"writer":{}}}`
	id := identityOf(t, payload, "", false)
	for _, tc := range []struct {
		name   string
		guard  idp.Guard
		clause string // "" = allowed
	}{
		{"string", idp.RequireClaim("tid", "t1"), ""},
		{"one of the values", idp.RequireClaim("tid", "t0", "t1"), ""},
		{"other string", idp.RequireClaim("tid", "t2"), "claims:tid"},
		{"case matters", idp.RequireClaim("tid", "T1"), "claims:tid"},
		{"array element", idp.RequireClaim("groups", "ops"), ""},
		{"no array element", idp.RequireClaim("groups", "sales"), "claims:groups"},
		{"number", idp.RequireClaim("level", 3), ""},
		{"number 3.0", idp.RequireClaim("level", 3.0), ""},
		{"number as json 3e0", idp.RequireClaim("level", json.Number("3e0")), ""},
		{"number as json 30e-1", idp.RequireClaim("level", json.Number("30e-1")), ""},
		{"string is not the number", idp.RequireClaim("level", "3"), "claims:level"},
		{"fraction", idp.RequireClaim("ratio", 0.5), ""},
		{"exact beyond float64", idp.RequireClaim("big", json.Number("9007199254740992")), "claims:big"},
		{"exact beyond float64, equal", idp.RequireClaim("big", json.Number("9007199254740993")), ""},
		{"uint64", idp.RequireClaim("big", uint64(9007199254740993)), ""},
		{"bool", idp.RequireClaim("admin", true), ""},
		{"bool false", idp.RequireClaim("admin", false), "claims:admin"},
		{"bool is not the string", idp.RequireClaim("admin", "true"), "claims:admin"},
		{"nested path", idp.RequireClaim("nested.org.id", "o1"), ""},
		{"namespaced", idp.RequireClaim("https://example.com/tier", "gold"), ""},
		{"keys", idp.RequireClaim("keys(roles)", "writer"), ""},
		{"absent", idp.RequireClaim("nope", "x"), "claims:nope"},
		{"null", idp.RequireClaim("nul", "null"), "claims:nul"},
		{"object never matches", idp.RequireClaim("obj", "a"), "claims:obj"},
		{"array with an object never matches", idp.RequireClaim("mixed", "x"), "claims:mixed"},
		{"path through a string", idp.RequireClaim("tid.x", "t1"), "claims:tid.x"},
		{"all: both", idp.RequireClaims(idp.MatchAll, idp.ClaimRule{Path: "tid", Values: []any{"t1"}}, idp.ClaimRule{Path: "admin", Values: []any{true}}), ""},
		{"all: second fails", idp.RequireClaims(idp.MatchAll, idp.ClaimRule{Path: "tid", Values: []any{"t1"}}, idp.ClaimRule{Path: "level", Values: []any{4}}), "claims:level"},
		{"any: second", idp.RequireClaims(idp.MatchAny, idp.ClaimRule{Path: "tid", Values: []any{"t9"}}, idp.ClaimRule{Path: "level", Values: []any{3}}), ""},
		{"any: none", idp.RequireClaims(idp.MatchAny, idp.ClaimRule{Path: "tid", Values: []any{"t9"}}, idp.ClaimRule{Path: "level", Values: []any{4}}), "claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the second judgement comes from the memo
				clause, ok := judge(tc.guard, id)
				if ok != (tc.clause == "") || clause != tc.clause {
					t.Fatalf("Judge = %q, %v; want clause %q", clause, ok, tc.clause)
				}
			}
			if tc.guard.Allow(id.User) {
				t.Fatal("Allow without the claims admitted the user")
			}
		})
	}
}

func TestClaimsGuardRefusesBadRules(t *testing.T) {
	for name, rules := range map[string][]idp.ClaimRule{
		"none":           nil,
		"bad path":       {{Path: "a..b", Values: []any{"x"}}},
		"twice":          {{Path: "a", Values: []any{"x"}}, {Path: "a", Values: []any{"y"}}},
		"no values":      {{Path: "a"}},
		"empty string":   {{Path: "a", Values: []any{""}}},
		"nil":            {{Path: "a", Values: []any{nil}}},
		"object":         {{Path: "a", Values: []any{map[string]any{}}}},
		"NaN":            {{Path: "a", Values: []any{json.Number("NaN")}}},
		"bad json num":   {{Path: "a", Values: []any{json.Number("01")}}},
		"bad claimvalue": {{Path: "a", Values: []any{idp.ClaimValue{Kind: idp.ClaimBool, Text: "yes"}}}},
	} {
		if _, err := idp.NewClaimsGuard(idp.MatchAll, rules...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := idp.NewClaimsGuard(idp.MatchStrategy(9), idp.ClaimRule{Path: "a", Values: []any{"x"}}); err == nil {
		t.Error("accepted an unknown strategy")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("RequireClaim with no value did not panic")
		}
	}()
	idp.RequireClaim("tid")
}

func TestClaimValues(t *testing.T) {
	p := &idp.TokenPayload{Raw: json.RawMessage(`{"a":["x",1.50,true],"n":-0.0,"o":{"k":1},"r":{"b":{},"a":{}}}`)}
	path := func(s string) idp.ClaimPath {
		cp, err := idp.ParseClaimPath(s)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	got, err := p.ClaimValues(path("a"))
	want := []idp.ClaimValue{{Kind: idp.ClaimString, Text: "x"}, {Kind: idp.ClaimNumber, Text: "1.5"}, {Kind: idp.ClaimBool, Text: "true"}}
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("a: %v, %v; want %v", got, err, want)
	}
	if got, err := p.ClaimValues(path("n")); err != nil || len(got) != 1 || got[0].Text != "0" {
		t.Errorf("n: %v, %v; want the number 0", got, err)
	}
	if got, err := p.ClaimValues(path("keys(r)")); err != nil || len(got) != 2 || got[0].Text != "b" || got[1].Text != "a" {
		t.Errorf("keys(r): %v, %v; want b, a", got, err)
	}
	if got, err := p.ClaimValues(path("absent")); err != nil || got != nil {
		t.Errorf("absent: %v, %v; want none", got, err)
	}
	if _, err := p.ClaimValues(path("o")); !errors.Is(err, idp.ErrClaimType) {
		t.Errorf("o: %v, want ErrClaimType", err)
	}
	if _, err := p.ClaimValues(path("keys(a)")); !errors.Is(err, idp.ErrClaimType) {
		t.Errorf("keys(a): %v, want ErrClaimType", err)
	}
}

func TestCanonicalNumberExported(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "1.0": "1", "1e0": "1", "-0": "0", "1e22": "1e+22"} {
		if got, err := idp.CanonicalNumber(in); err != nil || got != want {
			t.Errorf("CanonicalNumber(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := idp.CanonicalNumber("+1"); err == nil {
		t.Error("accepted +1")
	}
}

func TestEmailDomainsGuard(t *testing.T) {
	g := idp.RequireEmailDomains("corp.example.com", "Example.ORG")
	for _, tc := range []struct {
		email    string
		verified bool
		ok       bool
	}{
		{"alice@corp.example.com", true, true},
		{"alice@Corp.Example.COM", true, true},
		{"bob@example.org", true, true},
		{"alice@corp.example.com", false, false},
		{"alice@sub.corp.example.com", true, false},
		{"alice@evil-corp.example.com", true, false},
		{"alice@corp.example.com.evil.com", true, false},
		{"corp.example.com", true, false},
		{"@corp.example.com", true, false},
		{"\"a@corp.example.com\"@evil.com", true, false},
		{"alice@corp.example.com ", true, false},
		{"alice@corp.example.\u212aom", true, false}, // Kelvin sign: not folded
		{"", true, false},
	} {
		clause, ok := judge(g, identityOf(t, `{}`, tc.email, tc.verified))
		if ok != tc.ok || (!ok && clause != "email_domains") {
			t.Errorf("%q verified=%v: %q, %v; want %v", tc.email, tc.verified, clause, ok, tc.ok)
		}
	}
	for _, d := range []string{"", "@example.com", "*.example.com", ".example.com", "example.com.", "exa mple.com", "bücher.de", "a..b", "-a.com", "a_b.com"} {
		if _, err := idp.NewEmailDomainsGuard(d); err == nil {
			t.Errorf("domain %q accepted", d)
		}
	}
	if _, err := idp.NewEmailDomainsGuard(); err == nil {
		t.Error("no domains accepted")
	}
	if _, err := idp.NewEmailDomainsGuard("xn--bcher-kva.de", "localhost"); err != nil {
		t.Error(err)
	}
}

// tenantGuard is a guard of the user's own, naming its clause.
type tenantGuard struct{}

func (tenantGuard) Allow(*idp.User) bool { return false }
func (tenantGuard) Clause() string       { return "tenant" }

// A refused request names the clause in the 403 body, and only its name;
// the detail is worded after that clause (a token from an issuer the rule
// does not accept is not "lacking a role or scope", as every clause but
// groups, claims and e-mail domains used to say).
func TestForbiddenNamesTheClause(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	claims := srv.UserClaims(clientID, "alice", "creator")
	claims["tid"] = "secret-tenant"
	tok := srv.Mint(claims)
	for _, tc := range []struct {
		guards []idp.Guard
		clause string
		detail string
	}{
		{[]idp.Guard{idp.RequireRoles(idp.MatchAll, "admin")}, "roles", "the token lacks a required role"},
		{[]idp.Guard{idp.RequireClientRoles("app", idp.MatchAll, "admin")}, "client_roles:app", "the token lacks a required role of client app"},
		{[]idp.Guard{idp.RequireScopes(idp.MatchAll, "write")}, "scopes", "the token lacks a required scope"},
		{[]idp.Guard{idp.RequireGroups(idp.MatchAll, "eng")}, "groups", "the token lacks a required group"},
		{[]idp.Guard{idp.RequireRoles(idp.MatchAll, "creator"), idp.RequireClaim("tid", "other")}, "claims:tid", "the token lacks a required claim value"},
		{[]idp.Guard{idp.RequireClaims(idp.MatchAny, idp.ClaimRule{Path: "tid", Values: []any{"x"}})}, "claims", "the token lacks a required claim value"},
		{[]idp.Guard{idp.RequireEmailDomains("corp.example.com")}, "email_domains", "the token lacks a verified e-mail address in an accepted domain"},
		{[]idp.Guard{idp.RequireIssuers("partner")}, "issuers", "the token's issuer is not one this rule accepts"},
		{[]idp.Guard{tenantGuard{}}, "tenant", "the token does not satisfy the rule's tenant clause"},
		{[]idp.Guard{idp.GuardFunc(func(*idp.User) bool { return false })}, "", "a guard refused the token"},
	} {
		rec := do(t, p.Require(tc.guards...)(&okHandler{}), "GET", "/", "Authorization", "Bearer "+tok)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusForbidden {
			t.Fatalf("%s: %d %s", tc.clause, rec.Code, rec.Body)
		}
		if got, _ := body["clause"].(string); got != tc.clause {
			t.Errorf("clause %q, want %q (%s)", got, tc.clause, rec.Body)
		}
		if d, _ := body["detail"].(string); d != tc.detail {
			t.Errorf("%s: detail %q, want %q", tc.clause, d, tc.detail)
		}
		if strings.Contains(rec.Body.String(), "secret-tenant") || strings.Contains(rec.Body.String(), "alice") {
			t.Errorf("the body leaks token content: %s", rec.Body)
		}
	}
	ok := do(t, p.Require(idp.RequireClaim("tid", "secret-tenant"), idp.RequireEmailDomains("example.com"))(&okHandler{}), "GET", "/", "Authorization", "Bearer "+tok)
	if ok.Code != http.StatusOK {
		t.Fatalf("matching claims: %d %s", ok.Code, ok.Body)
	}
}

// FuzzClaimsGuard compares the claims guard with a reference built on
// encoding/json and math/big: a claim (any JSON) matches a wanted value
// exactly when the claim, or an element of the claim's array, equals it
// with its type, numbers by decimal value.
func FuzzClaimsGuard(f *testing.F) {
	for _, s := range []struct {
		claim string
		kind  uint8
		want  string
	}{
		{`"a"`, 0, "a"}, {`["a","b"]`, 0, "b"}, {`1.0`, 2, "1"}, {`[1e0]`, 2, "1.00"}, {`true`, 1, "true"},
		{`"1"`, 2, "1"}, {`{"a":1}`, 0, "a"}, {`[["a"]]`, 0, "a"}, {`"\u0061"`, 0, "a"}, {`9007199254740993`, 2, "9007199254740992"},
		{`-0`, 2, "0"}, {`[null,"a"]`, 0, "a"}, {`1e999999999`, 2, "1e999999999"},
	} {
		f.Add(s.claim, s.kind, s.want)
	}
	f.Fuzz(func(t *testing.T, claim string, kind uint8, want string) {
		if !json.Valid([]byte(claim)) || !utf8.ValidString(claim) {
			return // the verifier refuses such a payload (invalid UTF-8: malformed)
		}
		var wantValue any
		switch kind % 3 {
		case 0:
			if want == "" {
				return
			}
			wantValue = want
		case 1:
			wantValue = want == "true"
		case 2:
			if _, err := idp.CanonicalNumber(want); err != nil || hugeExponent(want) {
				return
			}
			wantValue = json.Number(want)
		}
		g, err := idp.NewClaimsGuard(idp.MatchAll, idp.ClaimRule{Path: "c", Values: []any{wantValue}})
		if err != nil {
			t.Fatalf("NewClaimsGuard(%#v): %v", wantValue, err)
		}
		_, got := judge(g, identityOf(t, `{"c":`+claim+`}`, "", false))
		if ref, ok := referenceMatch(claim, wantValue); ok && got != ref {
			t.Fatalf("claim %s, want %#v: guard %v, reference %v", claim, wantValue, got, ref)
		}
	})
}

// referenceMatch is the claims rule on one claim, by encoding/json; ok is
// false when the reference cannot judge (a number too large for big.Rat
// to expand quickly).
func referenceMatch(claim string, want any) (match, ok bool) {
	d := json.NewDecoder(strings.NewReader(claim))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return false, false
	}
	scalar := func(x any) (bool, bool) {
		switch x := x.(type) {
		case string:
			w, isStr := want.(string)
			return isStr && w == x, true
		case bool:
			w, isBool := want.(bool)
			return isBool && w == x, true
		case json.Number:
			w, isNum := want.(json.Number)
			if !isNum {
				return false, true
			}
			if hugeExponent(string(x)) {
				return false, false
			}
			a, _ := new(big.Rat).SetString(string(x))
			b, _ := new(big.Rat).SetString(string(w))
			return a.Cmp(b) == 0, true
		}
		return false, true
	}
	arr, isArr := v.([]any)
	if !isArr {
		switch v.(type) {
		case map[string]any, nil:
			return false, true
		}
		return scalar(v)
	}
	found := false
	for _, e := range arr {
		switch e.(type) {
		case map[string]any, []any, nil:
			return false, true // an array holding these is not a claim rules read
		}
		m, ok := scalar(e)
		if !ok {
			return false, false
		}
		found = found || m
	}
	return found, true
}

func hugeExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return false
	}
	e := strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")
	return len(e) > 3
}

// BenchmarkClaimsGuard reports a claims rule of two paths on a token seen
// before (its judgement remembered) and on one never seen (the claims read
// from the payload), with a Keycloak-sized payload.
func BenchmarkClaimsGuard(b *testing.B) {
	srv := idptest.NewServer(b)
	claims := srv.UserClaims(clientID, "alice", "creator")
	claims["tid"] = "9188040d-6c67-4c5b-b112-36a304b66dad"
	raw, err := json.Marshal(claims)
	if err != nil {
		b.Fatal(err)
	}
	g := idp.RequireClaims(idp.MatchAll,
		idp.ClaimRule{Path: "tid", Values: []any{"9188040d-6c67-4c5b-b112-36a304b66dad"}},
		idp.ClaimRule{Path: "email_verified", Values: []any{true}})
	id := identityOf(b, string(raw), "", true)
	b.Run("seen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := judge(g, id); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := judge(g, identityOf(b, string(raw), "", true)); !ok {
				b.Fatal("refused")
			}
		}
	})
}
