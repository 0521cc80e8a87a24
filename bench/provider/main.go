// Command provider runs the benchmark's OpenID Connect provider (package
// idptest, Keycloak's paths and claim shapes) and writes access tokens for
// the load generator: valid.txt (distinct valid RS256 tokens, each valid
// for -ttl) and invalid.txt (tokens that must be rejected: bad signature,
// expired, wrong audience; -invalid of them). Tokens are signed in
// parallel (-j, default GOMAXPROCS): 40,000 take about 16 s on 2 cores. It
// prints one JSON line with its URL and realm on stdout, then serves until
// killed.
//
// It is a benchmark tool, NOT an identity provider: see package idptest.
//
//	go run ./bench/provider -client bench -role bench-user -n 40000 -invalid 1000 -out /tmp/tokens
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func main() {
	realm := flag.String("realm", "bench", "realm name")
	client := flag.String("client", "bench", "client ID the tokens are issued for (aud and azp)")
	role := flag.String("role", "bench-user", "realm role of the tokens' users")
	n := flag.Int("n", 1000, "number of distinct valid tokens")
	nInvalid := flag.Int("invalid", -1, "number of invalid tokens (default: -n)")
	ttl := flag.Duration("ttl", time.Hour, "lifetime of the valid tokens")
	workers := flag.Int("j", runtime.GOMAXPROCS(0), "tokens signed in parallel")
	out := flag.String("out", ".", "directory for valid.txt and invalid.txt")
	dpopURL := flag.String("dpop-url", "", "also write dpop.txt: one DPoP-bound token and -dpop-n proofs of its key for GET on this URL")
	dpopN := flag.Int("dpop-n", 40000, "number of DPoP proofs (each distinct: a proof is accepted once)")
	flag.Parse()
	if *nInvalid < 0 {
		*nInvalid = *n
	}

	// The tokens' client may exchange them (credential: exchange, secret
	// "<client>-secret") for bench-api, and has a service account.
	srv, err := idptest.Start(idptest.Options{Realm: *realm, Clients: []idptest.Client{
		{ID: *client, Secret: *client + "-secret", StandardTokenExchange: true, ServiceAccount: true},
		{ID: "bench-api", Secret: "bench-api-secret"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	start := time.Now()
	valid := mintAll(*n, *workers, func(i int) string {
		c := srv.UserClaims(*client, fmt.Sprintf("user%04d", i), *role)
		c["aud"] = []any{*client, "account"}
		c["exp"] = now.Add(*ttl).Unix()
		return srv.Mint(c)
	})
	invalid := mintAll(*nInvalid, *workers, func(i int) string {
		bad := srv.UserClaims(*client, fmt.Sprintf("bad%04d", i), *role)
		bad["aud"] = []any{*client, "account"}
		bad["exp"] = now.Add(*ttl).Unix()
		switch i % 3 {
		case 0: // signed by a key the provider never published, under its kid
			rs, _ := srv.KID()
			return srv.MintWith(idptest.MintOptions{Key: other, KID: rs}, bad)
		case 1: // expired an hour ago
			bad["exp"] = now.Add(-time.Hour).Unix()
			bad["iat"] = now.Add(-2 * time.Hour).Unix()
			return srv.Mint(bad)
		default: // for another client
			bad["aud"] = "someone-else"
			bad["azp"] = "someone-else"
			return srv.Mint(bad)
		}
	})
	log.Printf("minted %d valid and %d invalid tokens in %v (%d in parallel)",
		len(valid), len(invalid), time.Since(start).Round(time.Millisecond), *workers)
	if err := os.MkdirAll(*out, 0o750); err != nil {
		log.Fatal(err)
	}
	for name, toks := range map[string][]string{"valid.txt": valid, "invalid.txt": invalid} {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(strings.Join(toks, "\n")+"\n"), 0o600); err != nil {
			log.Fatal(err)
		}
	}
	if *dpopURL != "" {
		writeDPoP(srv, *client, *role, *dpopURL, *dpopN, *workers, *ttl, filepath.Join(*out, "dpop.txt"))
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"url": srv.URL, "realm": srv.Realm, "issuer": srv.Issuer})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}

// mintAll returns mint(0) ... mint(n-1), computed by the given number of
// goroutines (RSA signing is the cost: about a millisecond per token).
func mintAll(n, workers int, mint func(i int) string) []string {
	out := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				out[i] = mint(i)
			}
		})
	}
	wg.Wait()
	return out
}
