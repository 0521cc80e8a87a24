package proxy

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"
)

// ClientCertRule is a rule's clause on the client certificate
// (routes[].client_cert): the request must come with a verified client
// certificate (see ClientCertConfig and idp-proxy's tls.client_auth)
// whose subject and subject alternative names match. Every field given
// must match; within a list, one entry matching one of the certificate's
// names of that kind is enough. An empty clause ({}) admits any verified
// certificate.
type ClientCertRule struct {
	// Subject is the certificate's subject distinguished name exactly,
	// in RFC 4514 order and spelling, most specific first:
	// "CN=billing-batch,O=Example" (what Go's pkix.Name.String and
	// `openssl x509 -noout -subject -nameopt RFC2253` print). Spaces
	// around ',' and '=' and the letter case of attribute types do not
	// matter; values are compared exactly. [any]
	Subject string `mapstructure:"subject" yaml:"subject"`
	// DNS are DNS names (SAN dNSName), compared without letter case; a
	// leading "*." matches exactly one label ("*.batch.example.org"
	// matches "a.batch.example.org", not "batch.example.org" nor
	// "a.b.batch.example.org"). [any]
	DNS []string `mapstructure:"dns" yaml:"dns"`
	// URI are URIs (SAN uniformResourceIdentifier) such as SPIFFE IDs,
	// compared exactly; a trailing "*" matches any rest
	// ("spiffe://example.org/ns/billing/*"). [any]
	URI []string `mapstructure:"uri" yaml:"uri"`
	// Email are e-mail addresses (SAN rfc822Name), compared without
	// letter case; "*@example.org" matches any address of that domain.
	// [any]
	Email []string `mapstructure:"email" yaml:"email"`
	// Token is "required" (the certificate AND a valid token that passes
	// the rule's other clauses) or "optional" (the certificate admits
	// alone, as machine callers without tokens need; a valid token sent
	// along is forwarded as on a public route, an invalid one dropped).
	// With optional, the rule may have no clause on the token.
	// ["required"]
	Token string `mapstructure:"token" yaml:"token"`
}

// The values of ClientCertRule.Token.
const (
	CertTokenRequired = "required"
	CertTokenOptional = "optional"
)

// certRule is a compiled ClientCertRule.
type certRule struct {
	subject       string // normalised; "" for any
	dns, uri      []string
	email         []string
	tokenOptional bool
}

// compileCertRule compiles routes[i].client_cert; nil without one.
func compileCertRule(i int, rc RouteConfig) (*certRule, string, error) {
	c := rc.ClientCert
	if c == nil {
		return nil, "", nil
	}
	route := fmt.Sprintf("Routes[%d]", i)
	// its names a field of the rule by its last element.
	its := func(field string) fielderr.Ref { return leaf("%s", route+field) }
	// bad reports a problem of the clause's field k (".Token"), naming the
	// rule and the field: Routes[0] "/x": ClientCert.Token: ...
	bad := func(k, format string, args ...any) (*certRule, string, error) {
		field := route + ".ClientCert" + k
		if k == "" {
			return nil, "", fieldErrorf(fields(field), "%s %q: "+format, append([]any{named("%s", route), rc.Match}, args...)...)
		}
		return nil, "", fieldErrorf(fields(field), "%s %q: %s.%s: "+format, append([]any{named("%s", route), rc.Match, its(".ClientCert"), its(".ClientCert" + k)}, args...)...)
	}
	cr := &certRule{}
	switch strings.ToLower(c.Token) {
	case "", CertTokenRequired:
	case CertTokenOptional:
		cr.tokenOptional = true
	default:
		return bad(".Token", "%q: want required or optional", c.Token)
	}
	if rc.Public {
		return bad("", "%s excludes %s (use %s.%s: optional to admit by certificate alone)", its(".Public"), its(".ClientCert"), its(".ClientCert"), its(".ClientCert.Token"))
	}
	if cr.tokenOptional && (len(rc.Roles) > 0 || len(rc.ClientRoles) > 0 || len(rc.Scopes) > 0 || len(rc.Groups) > 0 ||
		len(rc.Claims) > 0 || len(rc.EmailDomains) > 0 || len(rc.Issuers) > 0) {
		return bad(".Token", "optional admits by certificate alone and excludes %s, %s, %s, %s, %s, %s and %s (they need a token: %s: required)",
			its(".Roles"), its(".ClientRoles"), its(".Scopes"), its(".Groups"), its(".Claims"), its(".EmailDomains"), its(".Issuers"), its(".ClientCert.Token"))
	}
	var descs []string
	if c.Subject != "" {
		s, err := normalizeDN(c.Subject)
		if err != nil {
			return bad(".Subject", "%q: %v", c.Subject, err)
		}
		cr.subject = s
		descs = append(descs, "subject "+s)
	}
	for _, d := range c.DNS {
		rest := strings.TrimPrefix(d, "*.")
		if rest == "" || strings.ContainsAny(rest, "* ") || strings.HasPrefix(rest, ".") || strings.HasSuffix(rest, ".") {
			return bad(".DNS", "%q: want a DNS name, or *. and a DNS name", d)
		}
		cr.dns = append(cr.dns, strings.ToLower(d))
	}
	for _, u := range c.URI {
		if u == "" || strings.Contains(strings.TrimSuffix(u, "*"), "*") || !strings.Contains(u, ":") {
			return bad(".URI", "%q: want a URI (scheme:...), optionally ending in *", u)
		}
		cr.uri = append(cr.uri, u)
	}
	for _, e := range c.Email {
		local, domain, ok := strings.Cut(e, "@")
		if !ok || local == "" || domain == "" || strings.Contains(domain, "@") || strings.Contains(domain, "*") || strings.Contains(local, "*") && local != "*" {
			return bad(".Email", "%q: want an address, or *@ and a domain", e)
		}
		cr.email = append(cr.email, strings.ToLower(e))
	}
	for _, l := range []struct {
		kind string
		v    []string
	}{{"dns", cr.dns}, {"uri", cr.uri}, {"email", cr.email}} {
		if len(l.v) > 0 {
			descs = append(descs, l.kind+" "+strings.Join(l.v, "|"))
		}
	}
	desc := "client certificate"
	if len(descs) > 0 {
		desc += " (" + strings.Join(descs, "; ") + ")"
	}
	if cr.tokenOptional {
		desc += ", no token needed"
	}
	return cr, desc, nil
}

// normalizeDN writes a distinguished name in one spelling: attribute
// types upper-cased, no spaces around ',', '+' and '='. Escaped
// characters (RFC 4514 §2.4) are kept as written.
func normalizeDN(s string) (string, error) {
	var b strings.Builder
	var part strings.Builder
	flush := func(sep byte) error {
		t, v, ok := strings.Cut(part.String(), "=")
		t, v = strings.TrimSpace(t), strings.TrimSpace(v)
		if !ok || t == "" || v == "" || strings.ContainsAny(t, " \\") {
			return fmt.Errorf("%q is not TYPE=value", part.String())
		}
		b.WriteString(strings.ToUpper(t))
		b.WriteByte('=')
		b.WriteString(v)
		if sep != 0 {
			b.WriteByte(sep)
		}
		part.Reset()
		return nil
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", fmt.Errorf("trailing backslash")
			}
			part.WriteByte(c)
			i++
			part.WriteByte(s[i])
		case ',', '+':
			if err := flush(c); err != nil {
				return "", err
			}
		default:
			part.WriteByte(c)
		}
	}
	if err := flush(0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// match reports the first clause c does not admit ("" when it admits
// all): "subject", "dns", "uri" or "email".
func (cr *certRule) match(c *x509.Certificate) string {
	if cr.subject != "" {
		// Go writes names as normalizeDN does, but for attribute types
		// it knows no short name of: normalise only when they differ.
		if s := c.Subject.String(); s != cr.subject {
			if n, err := normalizeDN(s); err != nil || n != cr.subject {
				return "subject"
			}
		}
	}
	if len(cr.dns) > 0 && !anyMatch(cr.dns, c.DNSNames, matchDNS) {
		return "dns"
	}
	if len(cr.uri) > 0 {
		uris := make([]string, len(c.URIs))
		for i, u := range c.URIs {
			uris[i] = u.String()
		}
		if !anyMatch(cr.uri, uris, matchURI) {
			return "uri"
		}
	}
	if len(cr.email) > 0 && !anyMatch(cr.email, c.EmailAddresses, matchEmail) {
		return "email"
	}
	return ""
}

func anyMatch(patterns, names []string, match func(pattern, name string) bool) bool {
	for _, p := range patterns {
		for _, n := range names {
			if match(p, n) {
				return true
			}
		}
	}
	return false
}

// matchDNS: exact without case, or "*." matching one label.
func matchDNS(p, name string) bool {
	name = strings.ToLower(name)
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		label, parent, ok := strings.Cut(name, ".")
		return ok && label != "" && parent == rest
	}
	return name == p
}

// matchURI: exact, or a prefix ending in "*".
func matchURI(p, uri string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(uri, prefix)
	}
	return uri == p
}

// matchEmail: exact without case, or "*@domain".
func matchEmail(p, addr string) bool {
	addr = strings.ToLower(addr)
	if domain, ok := strings.CutPrefix(p, "*@"); ok {
		_, d, ok := strings.Cut(addr, "@")
		return ok && d == domain
	}
	return addr == p
}

// checkClientCert applies rule rl's client_cert clause to r: nil when it
// admits, else the refusal (401 without a verified certificate, 403 when
// it does not match), its clause named for the access log and Decide.
func (p *Proxy) checkClientCert(r *http.Request, rl *rule) *verdict {
	c := verifiedClientCert(r)
	if c == nil {
		v := &verdict{rule: rl, dec: decNoToken, status: http.StatusUnauthorized,
			detail: "this route requires a client certificate (mutual TLS), verified by the proxy's client CA or by the trusted ingress", challenge: true}
		v.idp.Clause = "client_cert"
		return v
	}
	if clause := rl.cert.match(c); clause != "" {
		v := &verdict{rule: rl, dec: decForbidden, status: http.StatusForbidden,
			detail: "the client certificate's " + certClauseNames[clause] + " is not one this route admits"}
		v.idp.Clause = "client_cert:" + clause
		return v
	}
	return nil
}

var certClauseNames = map[string]string{"subject": "subject", "dns": "DNS names", "uri": "URIs", "email": "e-mail addresses"}
