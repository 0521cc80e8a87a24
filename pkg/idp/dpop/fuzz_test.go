package dpop

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseProof: no input panics the parser or Verify; whatever Verify
// refuses is an *Error; what it accepts has a thumbprint and a jti.
func FuzzParseProof(f *testing.F) {
	f.Add(strings.Join(strings.Fields(rfc9449Figure3), ""))
	f.Add(defaultParts().encode(f))
	f.Add(defaultParts().withKey("Ed25519", "EdDSA").encode(f))
	f.Add("a.b.c")
	f.Add("eyJ9.e30.")
	f.Add("e30.e30.AA")
	f.Add("eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7fX0.e30.AA")
	v := newTestVerifier(f, Options{Now: func() time.Time { return time.Unix(1562262616, 0) }})
	f.Fuzz(func(t *testing.T, raw string) {
		if p, err := parseProof(raw, v.names, v.headers); err == nil && p.signingInput == "" {
			t.Fatal("parsed without a signing input")
		}
		p, err := v.Verify(ctx, Request{Method: "POST", URL: "https://server.example.com/token", Proofs: []string{raw}})
		if err != nil {
			if e := (*Error)(nil); !errors.As(err, &e) {
				t.Fatalf("refusal not an *Error: %v", err)
			}
			return
		}
		if p.JKT == "" || p.JTI == "" {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// FuzzNormalizeHTU: no input panics; the result is absolute http(s), has
// no query or fragment, and is a fixed point (normalising it again
// changes nothing).
func FuzzNormalizeHTU(f *testing.F) {
	for _, s := range []string{
		"https://api.example.com/orders", "HTTP://A.B:80", "https://x/a/./b/../%7e%2f?q#f",
		"https://[::1]:8443/", "https://x/%2E%2E/%2e", "http://x:/", "https://x/.%2e/a", "https://x/..%2F",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeHTU(in)
		if err != nil {
			return
		}
		if !strings.HasPrefix(out, "https://") && !strings.HasPrefix(out, "http://") || strings.ContainsAny(out, "?#") {
			t.Fatalf("NormalizeHTU(%q) = %q", in, out)
		}
		again, err := NormalizeHTU(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeHTU(%q) = %q, then %q, %v", in, out, again, err)
		}
	})
}
