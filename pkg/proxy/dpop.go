package proxy

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// DPoP at the proxy (RFC 9449): each rule applies a mode, its own
// (routes[].dpop) or the plugin's (idp.dpop.mode); the plugin checks the
// token's binding against the request (pkg/idp binding.go). Upstream, a
// request allowed with a DPoP-bound token carries the key's thumbprint in
// DPoPJKTHeader, and, when the token is forwarded, the client's
// Authorization ("DPoP <token>") and DPoP header as sent; the DPoP header
// is dropped otherwise (strippedAlways).

// DPoPJKTHeader carries to the upstream the RFC 7638 thumbprint of the key
// a request proved it holds (the token's cnf.jkt): set only on requests
// allowed with a DPoP-bound token and a valid proof, stripped from every
// client request (as every X-Auth-Request- header).
const DPoPJKTHeader = "X-Auth-Request-Dpop-Jkt"

// ruleDPoP is a rule's DPoP mode.
type ruleDPoP struct {
	mode dpop.Mode
	set  bool // routes[].dpop given; else the plugin's mode applies
}

// compileRuleDPoP reads a rule's DPoP: "" (the plugin's mode), off,
// allowed or required.
func compileRuleDPoP(s string) (ruleDPoP, error) {
	if s == "" {
		return ruleDPoP{}, nil
	}
	m, err := dpop.ParseMode(s)
	if err != nil {
		return ruleDPoP{}, err
	}
	return ruleDPoP{mode: m, set: true}, nil
}

// dpopMode is the DPoP mode of rule rl.
func (p *Proxy) dpopMode(rl *rule) dpop.Mode {
	if rl.dpop.set {
		return rl.dpop.mode
	}
	return p.dpopDefault
}

// forwardProof sets the upstream request's DPoP headers for the allowed
// identity id (or a forward-auth verdict's, which the ingress copies): the
// thumbprint header, and the client's proof (in) with its Authorization
// when the token is forwarded.
func (h *headerRules) forwardProof(out, in http.Header, id *idp.Identity) {
	jkt := id.DPoPThumbprint()
	if jkt == "" {
		return
	}
	out[DPoPJKTHeader] = []string{jkt}
	if h.forwardToken && h.cred == nil && id.Raw != "" {
		if v := in["Authorization"]; len(v) == 1 && len(v[0]) == len("DPoP ")+len(id.Raw) &&
			v[0][:len("DPoP ")] == "DPoP " && v[0][len("DPoP "):] == id.Raw {
			out["Authorization"] = v[:1:1] // as sent: no copy of the token
		} else {
			out["Authorization"] = []string{"DPoP " + id.Raw}
		}
		if v := in["Dpop"]; len(v) > 0 {
			out["Dpop"] = v
		}
	}
}

// newDPoPRefusals counts refusals of proofs of possession by the check
// that failed (idp.PossessionCheck: "htm", "jti", "replay", "x5t#S256",
// ...; a fixed set, never client content).
func newDPoPRefusals() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "idp_proxy_dpop_refusals_total",
		Help: "Requests refused for their proof of possession (DPoP proof, or the token's binding), by the check that failed.",
	}, []string{"check"})
}

// countPossession counts v's refusal by its check, when it is one.
func (p *Proxy) countPossession(v idp.Verdict) {
	if v.Outcome != idp.InvalidToken {
		return
	}
	if c := idp.PossessionCheck(v.Err); c != "" {
		p.metrics.dpopRefusals.WithLabelValues(c).Inc()
	}
}
