// Command es256verify verifies one ES256 JWS signature -n times (the
// crypto/ecdsa work of a DPoP proof's signature check, through
// golang-jwt's ES256 method as the proxy's verifiers use it), for
// bench/instr.sh: the instructions of -n 2000 minus those of -n 0, over
// 2000, are the cost of one verification, the unit of the DPoP budget
// (one proof signature verification + 15 % of idp-repeated).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"flag"
	"log"

	"github.com/golang-jwt/jwt/v5"
)

func main() {
	n := flag.Int("n", 2000, "verifications")
	flag.Parse()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	input := "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2In0.eyJqdGkiOiJ4IiwiaHRtIjoiR0VUIn0"
	sig, err := jwt.SigningMethodES256.Sign(input, key)
	if err != nil {
		log.Fatal(err)
	}
	for range *n {
		if err := jwt.SigningMethodES256.Verify(input, sig, &key.PublicKey); err != nil {
			log.Fatal(err)
		}
	}
}
