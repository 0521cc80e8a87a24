package idp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Sender-constrained tokens. A token whose cnf claim binds it to a key is
// checked on every request, whatever the DPoP mode, against what the
// request presents:
//
//   - cnf.jkt (DPoP, RFC 9449; Keycloak also marks such tokens typ
//     "DPoP"): only under the DPoP authorization scheme, with a valid
//     proof (dpop.Verifier) whose key's thumbprint is cnf.jkt; refused
//     where the mode is Off.
//   - cnf["x5t#S256"] (RFC 8705 §3): only under Bearer, when the SHA-256
//     thumbprint of the client certificate (the TLS connection's, or the
//     one an ingress passed, see WithClientCertificate) is the claim's.
//   - any other cnf: refused.
//
// The token's confirmation is read once, when it is verified, and kept on
// its Identity (the verified-token cache's hit path does no JSON work).

// cnfKind is the confirmation method of a verified token.
type cnfKind uint8

const (
	cnfNone cnfKind = iota // a bearer token
	cnfJKT                 // cnf.jkt: DPoP
	cnfX5T                 // cnf["x5t#S256"]: a client certificate
	cnfBad                 // a cnf of another shape: refused
)

// confirmation is what a token is bound to, as its Identity keeps it.
type confirmation struct {
	kind cnfKind
	// value is the thumbprint (base64url), of the key (cnfJKT) or of
	// the certificate (cnfX5T); the refusal's reason for cnfBad.
	value string
	// ath is the token's hash (cnfJKT), the ath its proofs carry: the
	// token is hashed once, when it is verified, not on every request.
	ath string
}

// confirmationOf reads the binding of c, a token of kind k that passed
// every other check.
func confirmationOf(k *tokenKind, c *token.Claims) confirmation {
	if !k.bound {
		return confirmation{}
	}
	typDPoP := strings.EqualFold(c.Typ, "DPoP")
	if !c.Cnf {
		if typDPoP {
			return confirmation{kind: cnfBad, value: "a DPoP token (typ DPoP) without its key (cnf.jkt)"}
		}
		return confirmation{}
	}
	bad := confirmation{kind: cnfBad, value: "a confirmation (cnf) other than cnf.jkt or cnf[\"x5t#S256\"] is not supported"}
	obj, err := token.Lookup(c.Raw, cnfPath)
	if err != nil || len(obj) == 0 || obj[0] != '{' {
		return bad
	}
	var got confirmation
	n := 0
	err = token.EachMember(nil, obj, func(name string, v []byte) error {
		n++
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return errors.New("not a string")
		}
		switch name {
		case "jkt":
			got = confirmation{kind: cnfJKT, value: s}
		case "x5t#S256":
			got = confirmation{kind: cnfX5T, value: s}
		default:
			return errors.New("unsupported")
		}
		return nil
	})
	if err != nil || n != 1 {
		return bad
	}
	if typDPoP && got.kind != cnfJKT {
		return confirmation{kind: cnfBad, value: "a DPoP token (typ DPoP) without its key (cnf.jkt)"}
	}
	return got
}

// withATH returns c with the ath of raw, c's token, for a DPoP-bound one.
func (c confirmation) withATH(raw string) confirmation {
	if c.kind == cnfJKT {
		c.ath = dpop.AccessTokenHash(raw)
	}
	return c
}

var cnfPath = token.Path{Text: "cnf", Names: []string{"cnf"}}

// DPoPThumbprint returns the RFC 7638 thumbprint of the key the token is
// bound to (its cnf.jkt), "" for a token not bound by DPoP. A request
// allowed with such a token carried a valid proof by that key.
func (id *Identity) DPoPThumbprint() string {
	if id.cnf.kind == cnfJKT {
		return id.cnf.value
	}
	return ""
}

// CertificateThumbprint returns the certificate thumbprint the token is
// bound to (its cnf["x5t#S256"]), "" for a token not bound to a
// certificate. A request allowed with such a token came with that
// certificate.
func (id *Identity) CertificateThumbprint() string {
	if id.cnf.kind == cnfX5T {
		return id.cnf.value
	}
	return ""
}

// PossessionError is the refusal of a token's binding: a DPoP proof that
// failed one of RFC 9449's checks, a bound token presented without its
// proof or certificate, or a scheme the mode refuses. It comes wrapped in
// an ErrInvalidToken (whose Reason says what failed); match it with
// errors.As.
type PossessionError struct {
	// Code is the error code of the challenge: "invalid_dpop_proof",
	// "use_dpop_nonce" or "invalid_token".
	Code string
	// Check names the check that failed ("htm", "htu", "iat", "jti",
	// "ath", "jkt", "signature", "scheme", "x5t#S256", ...): the proof's
	// (dpop.Error.Check) or the binding's. Logs, metrics and traces
	// carry it; it never holds token or proof content.
	Check string
	// Err is the dpop.Error of a failed proof, nil otherwise.
	Err error
}

func (e *PossessionError) Error() string {
	if e.Err != nil {
		return "idp: proof of possession: " + e.Check + ": " + e.Err.Error()
	}
	return "idp: proof of possession: " + e.Check
}

func (e *PossessionError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrSenderConstrained, e.Err}
	}
	return []error{ErrSenderConstrained}
}

// PossessionCheck returns the Check of err's PossessionError, "" when err
// carries none.
func PossessionCheck(err error) string {
	var pe *PossessionError
	if errors.As(err, &pe) {
		return pe.Check
	}
	return ""
}

// Codes of PossessionError.
const (
	codeInvalidToken = "invalid_token"
	codeUseNonce     = dpop.CodeUseNonce
)

// refusedBinding is the refusal of a binding that is not the proof's.
func refusedBinding(check, reason string) error {
	return invalid(reason, &PossessionError{Code: codeInvalidToken, Check: check})
}

// errReplayUnavailable: the DPoP replay cache (Redis) failed, so no proof
// can be checked for replay: 503.
var errReplayUnavailable = fmt.Errorf("%w: the DPoP replay cache is unavailable", ErrUnavailable)

// replayUnavailable is the failure of the replay cache named name
// ("Redis", or "" for an unnamed one).
type replayUnavailable struct {
	name string
	err  error
}

func (e *replayUnavailable) Error() string {
	return errReplayUnavailable.Error() + ": " + e.err.Error()
}
func (e *replayUnavailable) Unwrap() []error { return []error{errReplayUnavailable, e.err} }

// replayDetail is the 503's detail.
func replayDetail(err error) string {
	var ru *replayUnavailable
	if errors.As(err, &ru) && ru.name != "" {
		return "the DPoP replay cache (" + ru.name + ") is unavailable; proofs cannot be checked until it is back"
	}
	return "the DPoP replay cache is unavailable; proofs cannot be checked until it is back"
}

// replayName is the name a replay cache gives itself (redisstore's:
// "Redis").
func replayName(c dpop.ReplayCache) string {
	if n, ok := c.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

// proofRefused turns a dpop.Verifier error into this package's.
func (p *Plugin) proofRefused(err error) error {
	if errors.Is(err, dpop.ErrUnavailable) {
		return &replayUnavailable{name: replayName(p.cfg.DPoP.Replay), err: err}
	}
	de := &dpop.Error{Code: dpop.CodeInvalidProof, Check: "proof", Reason: "invalid proof"}
	errors.As(err, &de)
	return invalid("DPoP proof: "+de.Reason, &PossessionError{Code: de.Code, Check: de.Check, Err: err})
}

// Presentation is a token as a request presented it, for
// VerifyPresentation: the token, its scheme, and what its binding is
// checked against.
type Presentation struct {
	// Token is the access token.
	Token string
	// DPoP reports that it came under the DPoP authorization scheme
	// (otherwise Bearer).
	DPoP bool
	// Mode is the DPoP mode to apply (Authorize applies
	// Config.DPoP.Mode).
	Mode dpop.Mode
	// Method and URL are the request the proof must name (htm, htu):
	// its method and the absolute URL the client used (the query is
	// ignored).
	Method, URL string
	// Proofs are the request's DPoP header values.
	Proofs []string
	// Certificate is the client's certificate, nil without one.
	Certificate *x509.Certificate
}

// VerifyPresentation verifies pr.Token as VerifyIdentity does, then its
// binding as Authorize does for a request: the lower-level entry for a
// caller that is not handed the request itself (forward-auth, gRPC
// interceptors). Errors are Verify's, and PossessionError (wrapped in
// ErrInvalidToken) for a binding refused.
func (p *Plugin) VerifyPresentation(ctx context.Context, pr Presentation) (*Identity, error) {
	id, err := p.verify(ctx, pr.Token)
	if err != nil {
		return nil, err
	}
	if err := p.checkPossession(ctx, id, &pr); err != nil {
		return nil, err
	}
	return id, nil
}

// AuthorizeMode is Authorize with the DPoP mode given rather than
// Config.DPoP.Mode: pkg/proxy applies each rule's.
func (p *Plugin) AuthorizeMode(r *http.Request, mode dpop.Mode, guards ...Guard) Verdict {
	return p.authorizeMode(r, mode, guards)
}

// boundOK reports whether id, presented under scheme dpopScheme, needs no
// further look at the request: a bearer token where bearer tokens pass
// (the path of every request on a route without DPoP).
func boundOK(id *Identity, dpopScheme bool, mode dpop.Mode) bool {
	return id.cnf.kind == cnfNone && !dpopScheme && mode != dpop.Required
}

// checkRequestPossession checks id's binding against r.
func (p *Plugin) checkRequestPossession(r *http.Request, id *Identity, dpopScheme bool, mode dpop.Mode) error {
	if boundOK(id, dpopScheme, mode) {
		return nil
	}
	pr := Presentation{Token: id.Raw, DPoP: dpopScheme, Mode: mode, Method: r.Method}
	if dpopScheme && mode != dpop.Off {
		pr.URL = p.requestURL(r)
		pr.Proofs = r.Header["Dpop"]
	}
	if id.cnf.kind == cnfX5T {
		pr.Certificate = ClientCertificate(r)
	}
	return p.checkPossession(r.Context(), id, &pr)
}

// checkPossession checks id's binding against pr.
func (p *Plugin) checkPossession(ctx context.Context, id *Identity, pr *Presentation) error {
	if pr.DPoP && pr.Mode == dpop.Off {
		return refusedBinding("scheme", "the DPoP authorization scheme is not accepted here (DPoP is off)")
	}
	switch id.cnf.kind {
	case cnfBad:
		return refusedBinding("cnf", "sender-constrained token: "+id.cnf.value)
	case cnfX5T:
		if pr.DPoP || pr.Mode == dpop.Required {
			return refusedBinding("scheme", "a certificate-bound token (cnf x5t#S256) is sent under Bearer, and this route requires DPoP")
		}
		if pr.Certificate == nil {
			return refusedBinding("x5t#S256", "certificate-bound token (cnf x5t#S256) without a client certificate")
		}
		if !thumbprintEqual(CertificateThumbprint(pr.Certificate), id.cnf.value) {
			return refusedBinding("x5t#S256", "certificate-bound token (cnf x5t#S256): the client certificate is not the one it is bound to")
		}
		return nil
	case cnfNone:
		if pr.Mode == dpop.Required {
			return refusedBinding("scheme", "a DPoP-bound token with its proof is required")
		}
		if pr.DPoP {
			return refusedBinding("cnf", "the DPoP scheme needs a DPoP-bound token (cnf.jkt)")
		}
		return nil
	}
	// cnfJKT
	if pr.Mode == dpop.Off {
		return refusedBinding("scheme", "a DPoP-bound token (cnf.jkt) is not accepted here (DPoP is off)")
	}
	if !pr.DPoP {
		return refusedBinding("scheme", "a DPoP-bound token (cnf.jkt) must be sent under the DPoP scheme with its proof")
	}
	// dpop compares the proof's key with cnf.jkt (RFC 9449 §4.3 step 12)
	// before the replay cache: proofs by other keys cannot fill it.
	if _, err := p.dpop.Verify(ctx, dpop.Request{Method: pr.Method, URL: pr.URL, Proofs: pr.Proofs,
		AccessToken: pr.Token, JKT: id.cnf.value, ATH: id.cnf.ath}); err != nil {
		return p.proofRefused(err)
	}
	return nil
}

// thumbprintEqual compares thumbprints in constant time.
func thumbprintEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// CertificateThumbprint is RFC 8705 §3.1's x5t#S256 of cert: the
// base64url SHA-256 of its DER encoding.
func CertificateThumbprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

type clientCertKey struct{}

// WithClientCertificate returns a copy of ctx carrying cert as the
// request's client certificate, for a request whose TLS was terminated
// before it (an ingress passed the certificate in a header its operator
// trusts). ClientCertificate prefers the request's own TLS connection's.
func WithClientCertificate(ctx context.Context, cert *x509.Certificate) context.Context {
	return context.WithValue(ctx, clientCertKey{}, cert)
}

// ClientCertificate returns r's client certificate: its TLS connection's
// first peer certificate, else the one WithClientCertificate put in its
// context; nil without one.
func ClientCertificate(r *http.Request) *x509.Certificate {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return r.TLS.PeerCertificates[0]
	}
	cert, _ := r.Context().Value(clientCertKey{}).(*x509.Certificate)
	return cert
}

// requestURL is the absolute URL the client used for r, without its
// query: the scheme from the TLS connection (or, behind forward-auth, the
// original request's), or X-Forwarded-Proto when Config.DPoP.TrustForwarded;
// the host the rules match, Host.
func (p *Plugin) requestURL(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil || r.URL.Scheme == "https" {
		scheme = "https"
	}
	if p.cfg.DPoP.TrustForwarded {
		if v := r.Header["X-Forwarded-Proto"]; len(v) == 1 && (v[0] == "http" || v[0] == "https") {
			scheme = v[0]
		}
	}
	if host == "" {
		host = r.URL.Host
	}
	return scheme + "://" + host + r.URL.EscapedPath()
}

// dpopChallenges rewrites the WWW-Authenticate of a 401 (or 400, 403)
// for a request judged in a mode that admits DPoP, or refused for its
// binding (RFC 9449 §7.1): a DPoP challenge with algs (and the error when
// it is DPoP's), and the Bearer challenge where bearer tokens are allowed.
// With use_dpop_nonce it sets DPoP-Nonce.
func (p *Plugin) dpopChallenges(h http.Header, v Verdict, bearer string) {
	var pe *PossessionError
	isPE := errors.As(v.Err, &pe)
	if v.dpopMode == dpop.Off {
		return // Bearer only: the challenge WriteVerdict set
	}
	algs := `algs="` + p.dpopAlgs + `"`
	dpopCh := "DPoP " + algs
	bearerCh := bearer
	if v.Outcome == InvalidToken && (v.dpopScheme || isPE && pe.Check != "x5t#S256") {
		// the DPoP request's error goes in the DPoP challenge; the
		// Bearer one stays bare.
		code := codeInvalidToken
		if isPE {
			code = pe.Code
		}
		dpopCh = `DPoP error="` + code + `", error_description="` + v.Detail() + `", ` + algs
		bearerCh = strings.SplitN(bearer, ", error=", 2)[0]
		if code == codeUseNonce {
			h.Set("DPoP-Nonce", p.dpop.Nonce())
		}
	}
	h.Del("WWW-Authenticate")
	if v.dpopMode != dpop.Required {
		h.Add("WWW-Authenticate", bearerCh)
	}
	h.Add("WWW-Authenticate", dpopCh)
}
