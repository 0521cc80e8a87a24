// Package assert makes a Go service an OpenID Connect issuer of short-lived
// identity assertions: a Signer signs JWTs (ES256 by default) with a key
// set that rotates without a failed verification, and its Handler serves
// the discovery document and the JWKS at the issuer URL, so that any
// OpenID Connect library (pkg/idp first: idp.Config{IssuerURL: ...})
// verifies the assertions as those of an ordinary issuer.
//
// idp-proxy uses it for the "assertion" credential mode: an upstream gets
// an assertion about the caller, for that upstream alone, instead of the
// caller's token.
//
// # Keys and rotation
//
// Keys live in one PEM file of PKCS #8 "PRIVATE KEY" blocks (ECDSA P-256,
// P-384 or P-521, RSA, Ed25519). A block may carry a Not-Before header
// (RFC 3339): every key of the file is published at once, and the Signer
// signs with the key of the latest Not-Before that has passed. To rotate,
// append a key whose Not-Before lies beyond the verifiers' JWKS cache time
// (the next key is published before it is used), reload, and remove the
// old key once the last assertion it signed has expired (its successor's
// Not-Before plus the assertion lifetime). Every replica that reads the
// same file (a shared volume, a Kubernetes Secret) signs with the same
// keys. LoadOrCreateKeys generates a first P-256 key when the file does
// not exist.
package assert
