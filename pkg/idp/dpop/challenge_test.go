package dpop

import (
	"errors"
	"testing"
)

// RFC 9449 §7.1: the DPoP challenge names the error and the algorithms.
func TestChallenge_RFC9449_7_1(t *testing.T) {
	v := newTestVerifier(t, Options{Algorithms: []string{"ES256", "EdDSA"}})
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, `DPoP algs="ES256 EdDSA"`},
		{errors.New("no token"), `DPoP algs="ES256 EdDSA"`},
		{invalid(CheckHTM, "htm is not the request method"), `DPoP error="invalid_dpop_proof", error_description="htm is not the request method", algs="ES256 EdDSA"`},
		{useNonce("nonce missing"), `DPoP error="use_dpop_nonce", error_description="nonce missing", algs="ES256 EdDSA"`},
		{invalid(CheckHTU, "a \"quoted\"\n\\reason"), `DPoP error="invalid_dpop_proof", error_description="a quotedreason", algs="ES256 EdDSA"`},
	} {
		if got := v.Challenge(c.err); got != c.want {
			t.Errorf("Challenge(%v) = %s\nwant %s", c.err, got, c.want)
		}
	}
}
