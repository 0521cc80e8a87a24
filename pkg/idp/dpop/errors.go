package dpop

import "errors"

// OAuth error codes of RFC 9449 §7.1 and §9, the values of Error.Code.
const (
	CodeInvalidProof = "invalid_dpop_proof"
	CodeUseNonce     = "use_dpop_nonce"
)

// Check ids, the values of Error.Check: one per check of RFC 9449 §4.3,
// stable, for logs and metrics.
const (
	CheckCount      = "count"       // not exactly one DPoP header (§4.3 step 1)
	CheckSize       = "size"        // longer than Options.MaxProofBytes
	CheckSyntax     = "syntax"      // not a well-formed compact JWS with JSON objects (§4.3 step 2)
	CheckTyp        = "typ"         // typ is not dpop+jwt (§4.3 step 4)
	CheckAlg        = "alg"         // alg not asymmetric or not allowed (§4.3 step 5)
	CheckJWK        = "jwk"         // jwk missing, malformed, or not fit for alg (§4.3 step 7)
	CheckPrivateKey = "private_key" // jwk holds a private member (§4.3 step 7)
	CheckJTI        = "jti"         // jti missing, empty or too long (§4.2, §11.1)
	CheckHTM        = "htm"         // htm differs from the request method (§4.3 step 8)
	CheckHTU        = "htu"         // htu differs from the request URI (§4.3 step 9)
	CheckIAT        = "iat"         // iat outside [now-MaxAge, now+Leeway] (§4.3 step 11)
	CheckATH        = "ath"         // ath missing or not the access token's hash (§4.3 step 12)
	CheckJKT        = "jkt"         // the key is not Request.JKT (§4.3 step 12, the cnf.jkt binding)
	CheckNonce      = "nonce"       // nonce missing, malformed or stale (§4.3 step 10, §9)
	CheckSignature  = "signature"   // the signature does not verify with jwk (§4.3 step 6)
	CheckReplay     = "replay"      // jti seen before within the window (§11.1)
)

var (
	// ErrInvalidProof is matched (errors.Is) by every *Error whose Code is
	// invalid_dpop_proof.
	ErrInvalidProof = errors.New("dpop: invalid DPoP proof")
	// ErrUseNonce is matched by every *Error whose Code is use_dpop_nonce:
	// answer with a fresh Verifier.Nonce in the DPoP-Nonce header.
	ErrUseNonce = errors.New("dpop: use DPoP nonce")
	// ErrReplay is matched by the *Error of a proof seen before (Check
	// "replay"); it also matches ErrInvalidProof.
	ErrReplay = errors.New("dpop: DPoP proof replayed")
	// ErrUnavailable is wrapped by the error of Verify when the replay
	// cache failed: the proof could not be checked, a 503 for the caller,
	// not an *Error.
	ErrUnavailable = errors.New("dpop: replay cache unavailable")
)

// Error is a refused proof. Reason is human text safe to show to the
// client: it never holds the proof, the token or claim values.
type Error struct {
	Code   string // CodeInvalidProof or CodeUseNonce
	Check  string // which check failed, one of the Check constants
	Reason string // human text, client-safe
	Err    error  // the underlying cause, if any (for logs)
}

func (e *Error) Error() string {
	s := "dpop: " + e.Code + ": " + e.Check + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches ErrInvalidProof or ErrUseNonce by Code, and ErrReplay by
// Check.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrInvalidProof:
		return e.Code == CodeInvalidProof
	case ErrUseNonce:
		return e.Code == CodeUseNonce
	case ErrReplay:
		return e.Check == CheckReplay
	}
	return false
}

func invalid(check, reason string) *Error {
	return &Error{Code: CodeInvalidProof, Check: check, Reason: reason}
}

func invalidErr(check, reason string, err error) *Error {
	return &Error{Code: CodeInvalidProof, Check: check, Reason: reason, Err: err}
}

func useNonce(reason string) *Error {
	return &Error{Code: CodeUseNonce, Check: CheckNonce, Reason: reason}
}
