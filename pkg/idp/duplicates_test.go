package idp_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// userJSON is a valid access token payload of srv for clientID, with extra
// members appended as written.
func userJSON(srv *idptest.Server, extra string) string {
	return fmt.Sprintf(`{"iss":%q,"sub":"u-1","aud":%q,"azp":%q,"typ":"Bearer","exp":%d,"iat":%d%s}`,
		srv.Issuer, clientID, clientID, time.Now().Add(time.Hour).Unix(), time.Now().Add(-time.Minute).Unix(), extra)
}

// A name twice anywhere in the payload makes the token invalid (401),
// whatever reads it: a claim rule (either value), a rule with strategy
// any whose other clause matches, a nested claim, a claim nobody reads,
// and ClaimAt never meets one. Before, only the claims the verifier
// decodes itself were checked: a rule on "tid" answered 403 (or 200 with
// strategy any), and ClaimAt on another path read the token.
func TestDuplicateClaimAnywhereIsInvalid(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	p := newPlugin(t, srv, nil)
	tenantA := idp.RequireClaim("tid", "A")
	tenantB := idp.RequireClaim("tid", "B")
	anyOf := idp.RequireClaims(idp.MatchAny, idp.ClaimRule{Path: "tid", Values: []any{"A"}}, idp.ClaimRule{Path: "dept", Values: []any{"eng"}})
	orgID := idp.RequireClaim("org.id", "2")
	for _, tc := range []struct {
		name, extra, reason string
		guards              []idp.Guard
	}{
		{"claim rule, last value", `,"tid":"B","tid":"A"`, "duplicate claim tid", []idp.Guard{tenantA}},
		{"claim rule, first value", `,"tid":"B","tid":"A"`, "duplicate claim tid", []idp.Guard{tenantB}},
		{"strategy any, the other clause matches", `,"dept":"eng","tid":"B","tid":"A"`, "duplicate claim tid", []idp.Guard{anyOf}},
		{"escaped spelling of the same name", `,"tid":"B","t\u0069d":"A"`, "duplicate claim tid", []idp.Guard{tenantA}},
		{"nested name", `,"org":{"id":"1","id":"2"}`, "duplicate name id inside claim org", []idp.Guard{orgID}},
		{"in an array", `,"orgs":[{"id":"1"},{"id":"1","id":"2"}]`, "duplicate name id inside claim orgs", nil},
		{"a claim nothing reads", `,"oid":"1","oid":"2"`, "duplicate claim oid", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := srv.MintJSON(idptest.MintOptions{}, userJSON(srv, tc.extra))
			_, err := p.Verify(t.Context(), tok)
			if !errors.Is(err, idp.ErrInvalidToken) || idp.Reason(err) != tc.reason {
				t.Fatalf("Verify = %v (reason %q), want invalid_token %q", err, idp.Reason(err), tc.reason)
			}
			r, _ := http.NewRequest("GET", "/x", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			v := p.Authorize(r, tc.guards...)
			if v.Outcome != idp.InvalidToken || v.Status() != http.StatusUnauthorized {
				t.Fatalf("Authorize = %v %d (clause %q), want invalid_token 401", v.Outcome, v.Status(), v.Clause)
			}
			rec := do(t, p.Middleware(p.Require(tc.guards...)(&okHandler{})), "GET", "/x", "Authorization", "Bearer "+tok)
			if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Fatalf("Middleware: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
			}
		})
	}
	// The same claims once each: allowed, and ClaimAt reads them.
	tok := srv.MintJSON(idptest.MintOptions{}, userJSON(srv, `,"tid":"A","org":{"id":"2"}`))
	r, _ := http.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	if v := p.Authorize(r, tenantA, anyOf, orgID); !v.Allowed() {
		t.Fatalf("Authorize = %v %q", v.Outcome, v.Clause)
	}
	// A payload built by hand (never one Verify returned) still has its
	// path's duplicate refused by ClaimAt.
	tp := &idp.TokenPayload{Raw: []byte(`{"tid":"B","tid":"A"}`)}
	path, err := idp.ParseClaimPath("tid")
	if err != nil {
		t.Fatal(err)
	}
	var tid string
	if _, err := tp.ClaimAt(path, &tid); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("ClaimAt on a name twice = %v, want ErrInvalidToken", err)
	}
}
