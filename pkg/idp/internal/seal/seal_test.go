package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func testSealer(t testing.TB, secret string) *Sealer {
	t.Helper()
	s, err := New([]byte(secret), "login-state", testScope)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loginState is the shape of the /auth routes' login state.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	ReturnTo string `json:"r,omitempty"`
	Exp      int64  `json:"e"`
}

const (
	testCookie = "idp_login_state"
	testSecret = "0123456789abcdef0123456789abcdef"
	testScope  = `["domain=example.com","https://sso.example.com/realms/demo","apps"]`
)

func TestSealRoundTrip(t *testing.T) {
	s := testSealer(t, testSecret)
	now := time.Unix(1_800_000_000, 0)
	in := loginState{State: "st", Nonce: "no", Verifier: "ve", ReturnTo: "/r", Exp: now.Add(time.Minute).Unix()}
	v, err := s.Seal("c", in, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var out loginState
	if err := s.Open("c", v, now, &out); err != nil {
		t.Fatalf("open: %v", err)
	}
	if out != in {
		t.Fatalf("got %+v, want %+v", out, in)
	}
	if strings.Contains(v, "st") && strings.Contains(v, "ve") {
		// Not a proof of encryption, but a plain-text leak would show.
		if dec, _ := base64.RawURLEncoding.DecodeString(v); bytes.Contains(dec, []byte(`"v":"ve"`)) {
			t.Fatal("sealed value holds the plain text")
		}
	}
	v2, _ := s.Seal("c", in, now.Add(time.Minute))
	if v == v2 {
		t.Fatal("two seals of the same value are equal: nonce reused")
	}
}

func TestOpenRejects(t *testing.T) {
	s := testSealer(t, testSecret)
	now := time.Unix(1_800_000_000, 0)
	good, err := s.Seal("c", loginState{State: "x"}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 1
		return base64.RawURLEncoding.EncodeToString(b)
	}
	other := testSealer(t, "another secret of at least 32 bytes!!")
	otherVal, _ := other.Seal("c", loginState{State: "x"}, now.Add(time.Minute))
	otherPurpose, _ := New([]byte(testSecret), "session", testScope)
	purposeVal, _ := otherPurpose.Seal("c", loginState{State: "x"}, now.Add(time.Minute))
	otherScope, _ := New([]byte(testSecret), "login-state", `["domain=other.test","https://sso.example.com/realms/demo","apps"]`)
	scopeVal, _ := otherScope.Seal("c", loginState{State: "x"}, now.Add(time.Minute))
	// A value of version 1, sealed before values were bound to a scope:
	// the same key and payload, its version and name as the only AAD.
	plain := []byte(`{"exp":` + strconv.FormatInt(now.Add(time.Minute).Unix(), 10) + `,"d":{"s":"x","n":"","v":"","e":0}}`)
	v1 := append([]byte{1}, make([]byte, s.aead.NonceSize())...)
	v1 = s.aead.Seal(v1, v1[1:], plain, []byte{1, 'c'})
	unbound := base64.RawURLEncoding.EncodeToString(v1)
	cases := []struct {
		name, value, cookie string
		at                  time.Time
		want                error
	}{
		{"empty", "", "c", now, ErrInvalid},
		{"not base64", "!!!", "c", now, ErrInvalid},
		{"too short", base64.RawURLEncoding.EncodeToString(raw[:10]), "c", now, ErrInvalid},
		{"version byte", flip(0), "c", now, ErrInvalid},
		{"nonce bit", flip(3), "c", now, ErrInvalid},
		{"ciphertext bit", flip(len(raw) / 2), "c", now, ErrInvalid},
		{"tag bit", flip(len(raw) - 1), "c", now, ErrInvalid},
		{"truncated", good[:len(good)-4], "c", now, ErrInvalid},
		{"other cookie name", good, "d", now, ErrInvalid},
		{"other secret", otherVal, "c", now, ErrInvalid},
		{"other purpose", purposeVal, "c", now, ErrInvalid},
		{"other scope", scopeVal, "c", now, ErrInvalid},
		{"sealed before scopes", unbound, "c", now, ErrInvalid},
		{"oversized", strings.Repeat("A", 9000), "c", now, ErrInvalid},
		{"expired", good, "c", now.Add(time.Minute), ErrExpired},
		{"good", good, "c", now, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st loginState
			err := s.Open(tc.cookie, tc.value, tc.at, &st)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("open = %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzOpenSealed: opening arbitrary cookie values never panics and never
// succeeds without the key; sealing then opening any state round-trips.
func FuzzOpenSealed(f *testing.F) {
	s := testSealer(f, testSecret)
	now := time.Unix(1_800_000_000, 0)
	good, _ := s.Seal(testCookie, loginState{State: "s"}, now.Add(time.Minute))
	for _, v := range []string{good, "", "AQ", "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", good[:20], good + "A"} {
		f.Add(v, "s")
	}
	f.Fuzz(func(t *testing.T, value, state string) {
		var st loginState
		// The only value sealed with this key outside this function is the
		// seed (the fuzzing engine may run in another process, with
		// another nonce): anything else that opens is a forgery.
		if err := s.Open(testCookie, value, now, &st); err == nil && st != (loginState{State: "s"}) {
			t.Fatalf("forged value %q opened to %+v", value, st)
		}
		in := loginState{State: state, Nonce: value, Exp: 1}
		v, err := s.Seal(testCookie, in, now.Add(time.Minute))
		if err != nil {
			t.Fatalf("seal: %v", err)
		}
		var out loginState
		if err := s.Open(testCookie, v, now, &out); err != nil {
			t.Fatalf("round trip failed: %v", err)
		}
		// JSON replaces invalid UTF-8; valid strings come back unchanged.
		if utf8.ValidString(state) && utf8.ValidString(value) && out != in {
			t.Fatalf("round trip changed the state: %+v != %+v", out, in)
		}
	})
}

func BenchmarkSealOpen(b *testing.B) {
	s := testSealer(b, testSecret)
	now := time.Now()
	st := loginState{State: strings.Repeat("s", 52), Nonce: strings.Repeat("n", 52), Verifier: strings.Repeat("v", 43), ReturnTo: "/reports", Exp: now.Add(time.Minute).Unix()}
	b.ReportAllocs()
	for b.Loop() {
		v, err := s.Seal(testCookie, st, now.Add(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		var out loginState
		if err := s.Open(testCookie, v, now, &out); err != nil {
			b.Fatal(err)
		}
	}
}
