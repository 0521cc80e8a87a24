package dpop

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Off, Allowed, Required} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Fatalf("ParseMode(%q) = %v, %v", m, got, err)
		}
		var u Mode
		text, _ := m.MarshalText()
		if err := u.UnmarshalText(text); err != nil || u != m {
			t.Fatalf("text round trip of %v: %v %v", m, u, err)
		}
	}
	var zero Mode
	if zero != Off {
		t.Fatal("the zero Mode is not Off")
	}
	for _, s := range []string{"", "Required", "on", "true"} {
		_, err := ParseMode(s)
		if err == nil || !strings.Contains(err.Error(), "off, allowed or required") {
			t.Errorf("ParseMode(%q): %v", s, err)
		}
	}
}

// Errors match their sentinels by code and check, never by text.
func TestError_Is(t *testing.T) {
	cause := errors.New("cause")
	e := invalidErr(CheckHTM, "htm is not the request method", cause)
	if !errors.Is(e, ErrInvalidProof) || errors.Is(e, ErrUseNonce) || errors.Is(e, ErrReplay) || !errors.Is(e, cause) {
		t.Fatal("an invalid proof matches the wrong sentinels")
	}
	n := useNonce("nonce missing")
	if !errors.Is(n, ErrUseNonce) || errors.Is(n, ErrInvalidProof) {
		t.Fatal("use_dpop_nonce matches the wrong sentinels")
	}
	if got := e.Error(); got != "dpop: invalid_dpop_proof: htm: htm is not the request method: cause" {
		t.Fatalf("Error() = %q", got)
	}
}
