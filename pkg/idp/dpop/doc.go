// Package dpop verifies and makes DPoP proofs (OAuth 2.0 Demonstrating
// Proof of Possession, RFC 9449): the JWT a client signs with its own key
// and sends in the DPoP header of each request, so that an access token
// bound to that key (cnf.jkt, RFC 9449 §6) is worthless to whoever copies
// it without the key.
//
// A Verifier runs every check of RFC 9449 §4.3 on one request's proofs
// except the last, the comparison of the proof key's thumbprint with the
// access token's cnf.jkt: that belongs to whoever verified the token, and
// Proof.JKT (or Request.JKT, which Verify checks before touching the
// replay cache) is there for it. Every refusal is an *Error naming the
// check that failed (Error.Check) and the OAuth error code to answer
// with (Error.Code: invalid_dpop_proof, or use_dpop_nonce when a server
// nonce is required); a failure of the replay cache wraps ErrUnavailable
// and is not the client's fault.
//
// The checks run cheapest first: the size, the JOSE header, the claims,
// the method, the URI, the time window, the access-token hash and the
// nonce are all checked before the signature, and the replay cache is
// consulted only for a proof whose signature verified, so that a flood of
// forged proofs costs one parse each and cannot fill the cache.
//
// Server nonces (RFC 9449 §9) are stateless: a nonce is an HMAC of a time
// period under Options.NonceSecret, so replicas sharing the secret accept
// each other's nonces without sharing state. The replay cache is a
// ReplayCache: NewMemoryReplay for one replica, or a shared store (Redis)
// that the caller implements with one SET NX PX per Claim.
//
// NewProof makes proofs (for tests, command-line tools and clients);
// Thumbprint and ThumbprintOfKey compute RFC 7638 JWK thumbprints;
// NormalizeHTU is the RFC 3986 §6 normalisation under which htu is
// compared.
//
// The package depends on no other part of pkg/idp but its strict JSON
// scanner (pkg/idp/internal/token): member names matched exactly and a
// name given twice refused, as for every other token idp-proxy reads.
package dpop
