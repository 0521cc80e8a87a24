package idp_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func TestTokenFromRequestHeader(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	tests := []struct {
		name    string
		headers []string
		want    string
		err     error
	}{
		{"none", nil, "", idp.ErrNoToken},
		{"bearer", []string{"Bearer abc.def.ghi"}, "abc.def.ghi", nil},
		{"scheme case-insensitive", []string{"bEaReR abc.def.ghi"}, "abc.def.ghi", nil},
		{"extra spaces", []string{"Bearer   abc.def.ghi"}, "abc.def.ghi", nil},
		{"padding", []string{"Bearer abc=="}, "abc==", nil},
		{"bare token", []string{"abc.def.ghi"}, "", idp.ErrNoToken},
		{"basic auth", []string{"Basic dXNlcjpwYXNz"}, "", idp.ErrNoToken},
		{"empty bearer", []string{"Bearer "}, "", idp.ErrNoToken},
		{"scheme only", []string{"Bearer"}, "", idp.ErrNoToken},
		{"two headers", []string{"Bearer a.b.c", "Bearer d.e.f"}, "", idp.ErrInvalidRequest},
		{"comma list", []string{"Bearer a.b.c, Bearer d.e.f"}, "", idp.ErrInvalidToken},
		{"space inside", []string{"Bearer a.b c"}, "", idp.ErrInvalidToken},
		{"control char", []string{"Bearer a.b\x00c"}, "", idp.ErrInvalidToken},
		{"quote", []string{`Bearer "a.b.c"`}, "", idp.ErrInvalidToken},
		{"padding in the middle", []string{"Bearer ab=c"}, "", idp.ErrInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := p.TokenFromRequest(r)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestTokenFromRequestCookie(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.TokenLocation = idp.TokenLocationCookie; c.CookieName = "at" })
	tok := srv.Mint(map[string]any{"aud": clientID})
	h := p.Middleware(&okHandler{})

	if rec := do(t, h, "GET", "/x", "Cookie", "at="+tok); rec.Code != 200 {
		t.Fatalf("cookie token: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", "/x", "Authorization", "Bearer "+tok); rec.Code != 401 {
		t.Fatalf("header token accepted in COOKIE mode: %d", rec.Code)
	}
	if rec := do(t, h, "GET", "/x", "Cookie", "at="+tok+"; at="+tok); rec.Code != 400 {
		t.Fatalf("two cookies: %d, want 400", rec.Code)
	}
	if rec := do(t, h, "GET", "/x", "Cookie", "other="+tok); rec.Code != 401 {
		t.Fatalf("wrong cookie name: %d, want 401", rec.Code)
	}
}

// TestCookieTokenIsNotACredentialCrossOrigin: with TokenLocationCookie a
// browser attaches the token by itself, so a cross-origin (CSRF) write
// must not be authenticated by it; safe methods and same-origin or
// non-browser requests are.
func TestCookieTokenIsNotACredentialCrossOrigin(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.TokenLocation, c.CookieName = idp.TokenLocationCookie, "at"
		c.IncludeRoutes, c.RedirectURI, c.SessionSecret = true, "https://app.example/auth/callback", []byte(strings.Repeat("s", 32))
	})
	tok := srv.Mint(map[string]any{"aud": clientID})
	for _, tt := range []struct {
		name   string
		method string
		hdr    []string
		want   int
	}{
		{"same-site POST", "POST", []string{"Sec-Fetch-Site", "same-site"}, 401},
		{"cross-site DELETE", "DELETE", []string{"Sec-Fetch-Site", "cross-site"}, 401},
		{"foreign Origin", "PUT", []string{"Origin", "https://evil.example"}, 401},
		{"same-origin POST", "POST", []string{"Sec-Fetch-Site", "same-origin"}, 200},
		{"Origin of redirect_uri (trusted)", "POST", []string{"Origin", "https://app.example"}, 200},
		{"non-browser POST", "POST", nil, 200},
		{"cross-site GET", "GET", []string{"Sec-Fetch-Site", "cross-site"}, 200},
	} {
		next := &okHandler{}
		rec := do(t, p.Middleware(next), tt.method, "/x", append([]string{"Cookie", "at=" + tok}, tt.hdr...)...)
		if rec.Code != tt.want || (tt.want != 200) != (next.calls == 0) {
			t.Errorf("%s: %d (handler called %d times), want %d", tt.name, rec.Code, next.calls, tt.want)
		}
		// Authorize tells the refusal apart, for a proxy that answers it
		// differently: ErrCrossOrigin, which is also ErrNoToken.
		r := httptest.NewRequest(tt.method, "/x", nil)
		r.Header.Set("Cookie", "at="+tok)
		if tt.hdr != nil {
			r.Header.Set(tt.hdr[0], tt.hdr[1])
		}
		v := p.Authorize(r)
		if cross := errors.Is(v.Err, idp.ErrCrossOrigin); cross != (tt.want != 200) || (cross && v.Outcome != idp.NoToken) {
			t.Errorf("%s: Authorize = %v, %v; want ErrCrossOrigin %v", tt.name, v.Outcome, v.Err, tt.want != 200)
		}
	}
}
