package assert_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net/http/httptest"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/assert"
)

// A service signs an assertion for another service, which verifies it
// with pkg/idp as it would any OpenID Connect issuer's token.
func Example() {
	mux := httptest.NewServer(nil) // the issuer's URL, served below
	defer mux.Close()

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // or assert.LoadOrCreateKeys(path)
	signer, err := assert.NewSigner(assert.Options{Issuer: mux.URL, Keys: []assert.Key{{Signer: key}}})
	if err != nil {
		panic(err)
	}
	mux.Config.Handler = signer.Handler() // discovery and JWKS

	raw, _, err := signer.Sign(assert.Claims{Audience: "reports", Subject: "u-42", Username: "alice", Roles: []string{"viewer"}})
	if err != nil {
		panic(err)
	}

	// The receiving service:
	verifier, err := idp.New(context.Background(), idp.Config{
		IssuerURL: mux.URL, ClientID: "reports", Algorithms: []string{"ES256"},
		Claims: idp.ClaimMapping{Preset: idp.PresetGeneric},
	})
	if err != nil {
		panic(err)
	}
	defer verifier.Close()
	id, err := verifier.VerifyIdentity(context.Background(), raw)
	if err != nil {
		panic(err)
	}
	fmt.Println(id.User.PreferredUsername, id.User.RealmRoles)
	// Output: alice [viewer]
}
