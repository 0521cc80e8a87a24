package main

import (
	"log"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// writeDPoP writes file for bench/lua/dpop.lua: n lines "PATH TOKEN
// PROOF", the same DPoP-bound token (Keycloak's shape: cnf.jkt, typ DPoP)
// on each and a fresh proof of its key (its own jti, issued now) for GET
// on target. A proof is accepted once, so the load sends each at most
// once: n must exceed the requests of a run (the proxy's idp.dpop.max_age
// must cover the run, the proofs being made before it).
func writeDPoP(srv *idptest.Server, client, role, target string, n, workers int, ttl time.Duration, file string) {
	u, err := url.Parse(target)
	if err != nil || u.Path == "" {
		log.Fatalf("-dpop-url %q: want an absolute URL with a path", target)
	}
	key := idptest.NewDPoPKey()
	c := srv.UserClaims(client, "dpop-user", role)
	c["aud"] = []any{client, "account"}
	c["exp"] = time.Now().Add(ttl).Unix()
	tok := srv.MintDPoP(c, key, true)
	start := time.Now()
	lines := mintAll(n, workers, func(int) string {
		return u.Path + " " + tok + " " + key.Proof("GET", target, tok)
	})
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	log.Printf("made %d DPoP proofs in %v", n, time.Since(start).Round(time.Millisecond))
}
