package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// A client makes a proof for one request; the server verifies it and
// compares the key's thumbprint with the token's cnf.jkt.
func Example() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	const accessToken = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln" // bound to key: cnf.jkt = its thumbprint

	proof, err := dpop.NewProof(key, dpop.ProofParams{
		Method:      "GET",
		URL:         "https://api.example.com/orders?page=2",
		AccessToken: accessToken,
	})
	if err != nil {
		panic(err)
	}

	v, err := dpop.NewVerifier(dpop.Options{})
	if err != nil {
		panic(err)
	}
	req := dpop.Request{
		Method:      "GET",
		URL:         "https://API.example.com:443/orders?page=3", // normalised; the query is ignored
		Proofs:      []string{proof},
		AccessToken: accessToken,
	}
	p, err := v.Verify(context.Background(), req)
	if err != nil {
		panic(err)
	}
	jkt, _ := dpop.ThumbprintOfKey(&key.PublicKey)
	fmt.Println("verified:", p.Alg, p.JKT == jkt)

	// The same proof a second time is a replay.
	_, err = v.Verify(context.Background(), req)
	var e *dpop.Error
	fmt.Println("again:", errors.Is(err, dpop.ErrInvalidProof), errors.As(err, &e) && e.Check == "replay")
	// Output:
	// verified: ES256 true
	// again: true true
}
