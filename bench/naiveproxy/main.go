// Command naiveproxy is the benchmark's naive token checker: the bare
// proxy of bench/internal/benchproxy (the same as bench/bareproxy) that,
// on every request, verifies the bearer token with golang-jwt/jwt/v5 and
// MicahParks/keyfunc/v3 against the provider's key set (RS256, issuer, exp
// and audience), with no cache of verified tokens: each request pays one
// signature verification. A request without a valid token gets 401 and
// never reaches the upstream.
//
// It is a baseline for the load benchmark, not a proxy to deploy.
//
//	go run ./bench/naiveproxy -listen 127.0.0.1:9002 -upstream http://127.0.0.1:9000 \
//	    -issuer http://127.0.0.1:8080/realms/bench -audience bench
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/bench/internal/benchproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9002", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9000", "upstream URL")
	issuer := flag.String("issuer", "", "expected iss; the key set is found by OpenID discovery under it (required)")
	audience := flag.String("audience", "bench", "expected aud")
	jwksURL := flag.String("jwks", "", `key set URL (default: jwks_uri from discovery, else ISSUER/protocol/openid-connect/certs)`)
	flag.Parse()
	if *issuer == "" {
		log.Fatal("-issuer is required")
	}
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if *jwksURL == "" {
		*jwksURL = discoverJWKS(ctx, *issuer)
	}
	kf, err := keyfunc.NewDefaultCtx(ctx, []string{*jwksURL})
	if err != nil {
		log.Fatalf("key set %s: %v", *jwksURL, err)
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithIssuer(*issuer),
		jwt.WithAudience(*audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(10*time.Second),
	)
	rp := benchproxy.New(u)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			http.Error(w, "missing bearer token", http.StatusUnauthorized)
			return
		}
		if _, err := parser.ParseWithClaims(tok, &jwt.RegisteredClaims{}, kf.Keyfunc); err != nil {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	})
	log.Fatal(benchproxy.ListenAndServe(*listen, h))
}

// bearer returns the token of an "Authorization: Bearer TOKEN" value.
func bearer(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// discoverJWKS returns the jwks_uri of the issuer's OpenID configuration,
// or Keycloak's path when discovery fails.
func discoverJWKS(ctx context.Context, issuer string) string {
	fallback := strings.TrimRight(issuer, "/") + "/protocol/openid-connect/certs"
	u, err := discover(ctx, issuer)
	if err != nil {
		log.Printf("discovery failed, using %s: %v", fallback, err)
		return fallback
	}
	return u
}

func discover(ctx context.Context, issuer string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery: %s", resp.Status)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("discovery: no jwks_uri")
	}
	return doc.JWKSURI, nil
}
