package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// upstreamLog keeps the headers of every request the demo's shortener
// received.
type upstreamLog struct {
	mu      sync.Mutex
	headers []http.Header
}

func (l *upstreamLog) record(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.headers = append(l.headers, r.Header.Clone())
}

// check: every request that reached the shortener through the proxy with
// one of tokens carried an assertion of the proxy's issuer for the
// shortener, and none carried a token in any header or cookie.
func (l *upstreamLog) check(t *testing.T, ep Endpoints, tokens ...string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	asserted := 0
	for _, h := range l.headers {
		for name, vals := range h {
			for _, v := range vals {
				for _, tok := range tokens {
					if strings.Contains(v, tok) {
						t.Errorf("the shortener received the caller's token in %s", name)
					}
				}
			}
		}
		a := h.Get(assertionHeader)
		if a == "" {
			continue
		}
		asserted++
		var c struct {
			Iss string `json:"iss"`
			Aud any    `json:"aud"`
			Sub string `json:"sub"`
		}
		parts := strings.Split(a, ".")
		if len(parts) != 3 {
			t.Fatalf("%s is not a JWT: %q", assertionHeader, a)
		}
		b, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil || json.Unmarshal(b, &c) != nil {
			t.Fatalf("%s payload: %v", assertionHeader, err)
		}
		if c.Iss != ep.AssertionIssuer || c.Sub == "" {
			t.Errorf("assertion iss %q sub %q, want iss %q", c.Iss, c.Sub, ep.AssertionIssuer)
		}
		if aud, _ := json.Marshal(c.Aud); !strings.Contains(string(aud), `"`+assertionAudience+`"`) {
			t.Errorf("assertion aud %s, want %q", aud, assertionAudience)
		}
	}
	if asserted == 0 {
		t.Errorf("none of the shortener's %d requests carried %s", len(l.headers), assertionHeader)
	}
}

// checkShortenerRefusesForgeries calls the shortener directly, past the
// proxy: identity headers alone, and the caller's own token presented as
// the assertion, are 401.
func checkShortenerRefusesForgeries(t *testing.T, ep Endpoints, token string) {
	t.Helper()
	for name, h := range map[string]http.Header{
		"identity headers":          {identityHeader: {"alice"}, usernameHeader: {"alice"}, "X-Auth-Request-Roles": {CreatorRole}},
		"the caller's token":        {assertionHeader: {token}, "Authorization": {"Bearer " + token}},
		"a bearer token, no header": {"Authorization": {"Bearer " + token}},
	} {
		req, _ := http.NewRequest("POST", ep.Shortener+"/shorten", strings.NewReader(`{"url":"https://example.com/forged"}`))
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the shortener reached directly with %s: %d, want 401", name, resp.StatusCode)
		}
	}
}
