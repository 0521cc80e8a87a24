package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	"github.com/idp-proxy/idp-proxy/internal/clientcert"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Client certificates. A request's client certificate is its TLS
// connection's, verified by the listener against its client CAs
// (idp-proxy's tls.client_ca_file and tls.client_auth), or, behind an
// ingress that terminated TLS, the one the ingress passes in a header
// (ClientCertConfig), believed only from the ingress. It serves
// certificate-bound tokens (RFC 8705 §3: pkg/idp compares the token's
// cnf["x5t#S256"] with it) and the rules' client_cert clauses.

// ClientCertConfig reads the client certificate that an ingress which
// terminated TLS (and verified the certificate) passes in a header.
type ClientCertConfig struct {
	// Header is the request header that carries it, e.g.
	// "X-Forwarded-Client-Cert" (Envoy), "ssl-client-cert" (nginx with
	// proxy_set_header ssl-client-cert $ssl_client_escaped_cert),
	// "X-Forwarded-Tls-Client-Cert" (Traefik's passTLSClientCert, Caddy).
	// The header is removed from every request before anything reads it
	// and is never forwarded upstream. [none: certificates come only from
	// the proxy's own TLS listener]
	Header string `mapstructure:"header" yaml:"header"`
	// Format is how the header carries it: "xfcc" (Envoy's
	// X-Forwarded-Client-Cert: the Cert of its last element, the one the
	// nearest proxy appended), "pem" (URL-encoded PEM, nginx's
	// $ssl_client_escaped_cert) or "der" (base64 DER: Traefik, Caddy's
	// {http.request.tls.client.certificate_der_base64}, RFC 9440's
	// Client-Cert). Required with Header.
	Format string `mapstructure:"format" yaml:"format"`
	// TrustedCIDRs are the peers (the ingress) whose header is believed
	// on the proxy's listener; from any other peer it is stripped unread.
	// Forward-auth verify requests, which only the ingress may send
	// (forward_auth.trusted_cidrs or forward_auth.listen), need no entry
	// here. [none]
	TrustedCIDRs []string `mapstructure:"trusted_cidrs" yaml:"trusted_cidrs"`
}

// clientCerts is the compiled ClientCertConfig.
type clientCerts struct {
	header  string // canonical
	format  clientcert.Format
	trusted []netip.Prefix
	// parsed are the certificates of the header values seen last, by
	// value: a client sends the same one on every request, and parsing
	// it costs some sixty allocations. Emptied when full.
	mu     sync.RWMutex
	parsed map[string]*x509.Certificate
}

// maxParsedCerts bounds clientCerts.parsed.
const maxParsedCerts = 1024

// parse reads a header value, from the cache when it was read before.
func (cc *clientCerts) parse(value string) (*x509.Certificate, error) {
	cc.mu.RLock()
	c, ok := cc.parsed[value]
	cc.mu.RUnlock()
	if ok {
		return c, nil
	}
	c, err := clientcert.Parse(cc.format, value)
	if err != nil || c == nil {
		return c, err
	}
	cc.mu.Lock()
	if len(cc.parsed) >= maxParsedCerts {
		clear(cc.parsed)
	}
	cc.parsed[value] = c
	cc.mu.Unlock()
	return c, nil
}

// compileClientCerts checks c; nil without a header.
func compileClientCerts(c ClientCertConfig) (*clientCerts, error) {
	if c.Header == "" {
		if c.Format != "" || len(c.TrustedCIDRs) > 0 {
			return nil, fieldErrorf(fields("ClientCert.Header", "ClientCert.Format", "ClientCert.TrustedCIDRs"), "%s and %s need %s",
				named("ClientCert.Format"), named("ClientCert.TrustedCIDRs"), named("ClientCert.Header"))
		}
		return nil, nil
	}
	var errs []error
	if !isToken(c.Header) {
		errs = append(errs, fieldErrorf(fields("ClientCert.Header"), "%s %q is not a header name", named("ClientCert.Header"), c.Header))
	}
	cc := &clientCerts{header: http.CanonicalHeaderKey(c.Header), parsed: map[string]*x509.Certificate{}}
	switch {
	case c.Format == "":
		errs = append(errs, missingFieldf(fields("ClientCert.Format"), "%s is required with %s: xfcc (Envoy), pem (nginx $ssl_client_escaped_cert) or der (Traefik, Caddy)",
			named("ClientCert.Format"), named("ClientCert.Header")))
	default:
		f, err := clientcert.ParseFormat(c.Format)
		if err != nil {
			errs = append(errs, fieldErrorf(fields("ClientCert.Format"), "%s %q: want xfcc (Envoy), pem (nginx $ssl_client_escaped_cert) or der (Traefik, Caddy)", named("ClientCert.Format"), c.Format))
		}
		cc.format = f
	}
	for _, s := range c.TrustedCIDRs {
		p, err := parsePrefix(s)
		if err != nil {
			errs = append(errs, fieldErrorf(fields("ClientCert.TrustedCIDRs"), "%s: %q is not a CIDR (10.0.0.0/8) or an address", named("ClientCert.TrustedCIDRs"), s))
			continue
		}
		cc.trusted = append(cc.trusted, p)
	}
	if reserved := certHeaderConflict(cc.header); reserved != "" {
		errs = append(errs, fieldErrorf(fields("ClientCert.Header"), "%s %q is %s", named("ClientCert.Header"), c.Header, reserved))
	}
	return cc, errors.Join(errs...)
}

// certHeaderConflict says why the header (canonical) may not carry the
// certificate ("" when it may): one the proxy reads or sets for another
// purpose, or one that frames the request.
func certHeaderConflict(name string) string {
	switch name {
	case "Authorization", "Cookie", "Host", "Dpop", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"X-Forwarded-Uri", "X-Forwarded-Method", "X-Original-Uri", "X-Original-Method", "X-Original-Url", "X-Request-Id",
		"X-Real-Ip", "Connection", "Content-Length", "Content-Type", "Transfer-Encoding", "Te", "Upgrade", "Trailer":
		return "a header the proxy reads or sets for another purpose"
	}
	return ""
}

// parsePrefix reads a CIDR, or an address as its own /32 or /128.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, err
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return p.Masked(), nil
}

// peerIn reports whether the peer remoteAddr ("host:port") is in one of
// prefixes.
func peerIn(prefixes []netip.Prefix, remoteAddr string) bool {
	if len(prefixes) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// stripFrom adds the header, in every spelling ("ssl_client_cert" is
// "ssl-client-cert" to CGI, WSGI and PHP upstreams), to the headers
// stripped from forwarded requests: take removes only the spelling Go
// reads.
func (cc *clientCerts) stripFrom(h *headerRules, ups *upstreamSet) {
	h.strip[foldName(cc.header)] = struct{}{}
	if ups != nil {
		for _, up := range ups.all {
			up.headers.strip[foldName(cc.header)] = struct{}{}
		}
	}
}

// headerCertKey marks, in a request's context, the certificate read from
// the trusted header (the rules' client_cert clauses read it).
type headerCertKey struct{}

// take removes the header from r and, when trusted, returns r carrying
// the certificate it held for pkg/idp (idp.WithClientCertificate) and
// for the rules. A malformed header from a trusted peer is an error
// (400): the ingress is misconfigured, and guessing would be worse.
func (cc *clientCerts) take(r *http.Request, trusted bool) (*http.Request, error) {
	vals, ok := r.Header[cc.header]
	if !ok {
		return r, nil
	}
	delete(r.Header, cc.header) // never read untrusted, never forwarded
	if !trusted {
		return r, nil
	}
	value := vals[0]
	if len(vals) > 1 {
		if cc.format != clientcert.FormatXFCC {
			return r, fmt.Errorf("the client certificate header %s is given more than once", cc.header)
		}
		value = strings.Join(vals, ",") // XFCC lines are one list
	}
	cert, err := cc.parse(value)
	if err != nil {
		return r, fmt.Errorf("the client certificate header %s: %s", cc.header, strings.TrimPrefix(err.Error(), clientcert.ErrMalformed.Error()+": "))
	}
	if cert == nil {
		return r, nil
	}
	ctx := context.WithValue(idp.WithClientCertificate(r.Context(), cert), headerCertKey{}, cert)
	r = r.WithContext(ctx)
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		// The connection's certificate is the ingress's own (mutual TLS
		// between it and the proxy): the client's is the header's, which
		// pkg/idp must see first.
		st := *r.TLS
		st.PeerCertificates = []*x509.Certificate{cert}
		st.VerifiedChains = nil
		r.TLS = &st
	}
	return r, nil
}

// verifiedClientCert returns r's client certificate when it was verified:
// the trusted header's (the ingress verified it), else the TLS
// connection's when the listener verified it against its client CAs
// (VerifiedChains); nil otherwise.
func verifiedClientCert(r *http.Request) *x509.Certificate {
	if c, _ := r.Context().Value(headerCertKey{}).(*x509.Certificate); c != nil {
		return c
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		return r.TLS.PeerCertificates[0]
	}
	return nil
}

// takeClientCert applies the client-certificate header of r, when one is
// configured: believed from client_cert.trusted_cidrs, and on verify
// requests of a trusted ingress. It returns the request to judge, or the
// 400 verdict of a malformed header.
func (p *Proxy) takeClientCert(r *http.Request, verify bool) (*http.Request, *verdict) {
	trusted := peerIn(p.certs.trusted, r.RemoteAddr) ||
		verify && (r.Context().Value(trustedKey{}) != nil || p.fa.trusts(r.RemoteAddr))
	r2, err := p.certs.take(r, trusted)
	if err != nil {
		rl := p.badRule
		if verify {
			rl = p.verifyRule
		}
		return r, &verdict{rule: rl, dec: decBadRequest, status: http.StatusBadRequest, detail: err.Error()}
	}
	return r2, nil
}

// bearerChallenge is the WWW-Authenticate of plugin's 401 without a
// token, for the proxy's own 401s (RFC 9110 §11.6.1: a 401 names a
// scheme), asked once of the plugin.
func bearerChallenge(plugin *idp.Plugin) string {
	w := headerRecorder{}
	r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/"}, Header: http.Header{}}
	plugin.WriteVerdict(w, r, idp.Verdict{Outcome: idp.NoToken})
	return w.Header().Get("WWW-Authenticate")
}

// headerRecorder keeps the headers written to it and drops the rest.
type headerRecorder http.Header

func (h headerRecorder) Header() http.Header       { return http.Header(h) }
func (headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (headerRecorder) WriteHeader(int)             {}
