// Package clientcert reads the client certificate that an ingress which
// terminated TLS passes on in a request header: Envoy's
// X-Forwarded-Client-Cert, nginx's $ssl_client_escaped_cert (URL-encoded
// PEM), and base64 DER (Traefik's X-Forwarded-Tls-Client-Cert, Caddy's
// {http.request.tls.client.certificate_der_base64}, RFC 9440's
// Client-Cert).
//
// A header says nothing about who wrote it: the caller must accept one
// only from a peer it trusts, and strip it otherwise.
package clientcert

import (
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Format is how a header carries the certificate.
type Format string

// The formats.
const (
	// FormatXFCC is Envoy's X-Forwarded-Client-Cert: the certificate is
	// the Cert (or else the first of Chain) of the header's last element,
	// the one the nearest proxy appended; its Hash, when given, must be
	// the certificate's SHA-256.
	FormatXFCC Format = "xfcc"
	// FormatPEM is a URL-encoded PEM certificate: nginx's
	// $ssl_client_escaped_cert (the header ssl-client-cert by convention).
	FormatPEM Format = "pem"
	// FormatDER is base64 DER, several separated by commas (the first is
	// the client's), optionally between colons (RFC 9440) or URL-encoded
	// (older Traefik): Traefik's X-Forwarded-Tls-Client-Cert, Caddy's
	// certificate_der_base64 placeholder.
	FormatDER Format = "der"
)

// Formats lists the formats, for error messages and documentation.
var Formats = []Format{FormatXFCC, FormatPEM, FormatDER}

// DefaultHeader returns the header a format usually travels in.
func DefaultHeader(f Format) string {
	switch f {
	case FormatXFCC:
		return "X-Forwarded-Client-Cert"
	case FormatPEM:
		return "Ssl-Client-Cert"
	case FormatDER:
		return "X-Forwarded-Tls-Client-Cert"
	}
	return ""
}

// ErrMalformed is the error of a header value that carries no readable
// certificate; the wrapping error says why.
var ErrMalformed = errors.New("clientcert: malformed client certificate header")

// MaxValueBytes bounds a header value: a certificate chain of a few
// certificates, URL-encoded, fits well below it.
const MaxValueBytes = 32 << 10

// Parse reads the client certificate from a header value in format f. An
// empty value, or a placeholder its ingress left unreplaced ("{...}"), is
// no certificate: (nil, nil).
func Parse(f Format, value string) (*x509.Certificate, error) {
	if v := strings.TrimSpace(value); v == "" || placeholder(v) {
		return nil, nil
	}
	if len(value) > MaxValueBytes {
		return nil, malformed("the value exceeds %d bytes", MaxValueBytes)
	}
	switch f {
	case FormatXFCC:
		return ParseXFCC(value)
	case FormatPEM:
		return ParseEscapedPEM(value)
	case FormatDER:
		return ParseBase64DER(value)
	}
	return nil, fmt.Errorf("clientcert: unknown format %q", f)
}

// placeholder reports whether v is a template placeholder left as text:
// Caddy 2.6 sends "{http.request.tls.client.certificate_der_base64}" when
// the client gave no certificate. No format's certificate has braces.
// A placeholder's name is dotted (base64 has no '.').
func placeholder(v string) bool {
	if len(v) < 3 || v[0] != '{' || v[len(v)-1] != '}' || !strings.Contains(v, ".") {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ParseFormat checks a format's name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	return "", fmt.Errorf("clientcert: unknown format %q: want xfcc, pem or der", s)
}

// ParseEscapedPEM reads a URL-encoded PEM certificate (the first block
// when there are several: the client's, before its chain).
func ParseEscapedPEM(value string) (*x509.Certificate, error) {
	s, err := url.PathUnescape(strings.TrimSpace(value))
	if err != nil {
		return nil, malformed("not URL-encoded PEM: %v", err)
	}
	der, err := pemBody(s)
	if err != nil {
		return nil, err
	}
	return parseDER(der)
}

// ParseBase64DER reads base64 DER: the first of a comma-separated list,
// with or without RFC 9440's colons, URL-encoded or not.
func ParseBase64DER(value string) (*x509.Certificate, error) {
	first, _, _ := strings.Cut(value, ",")
	first = strings.TrimSpace(first)
	if strings.HasPrefix(first, ":") && strings.HasSuffix(first, ":") && len(first) >= 2 {
		first = first[1 : len(first)-1]
	}
	if strings.Contains(first, "%") {
		u, err := url.PathUnescape(first)
		if err != nil {
			return nil, malformed("not base64 DER: %v", err)
		}
		first = u
	}
	der, err := decodeBase64(first)
	if err != nil {
		return nil, malformed("not base64 DER: %v", err)
	}
	return parseDER(der)
}

// pemBody returns the DER of the first CERTIFICATE block of s. It reads
// the block by its markers rather than with encoding/pem so that the
// line breaks that proxies fold or drop (and a label whose space became
// "+" in query-style encoding) do not matter.
func pemBody(s string) ([]byte, error) {
	const begin, end, dashes = "-----BEGIN ", "-----END", "-----"
	i := strings.Index(s, begin)
	if i < 0 {
		// "BEGIN+CERTIFICATE": a space encoded as in a query string.
		if i = strings.Index(s, "-----BEGIN+"); i < 0 {
			return nil, malformed("no PEM block")
		}
	}
	rest := s[i+len(begin):]
	j := strings.Index(rest, dashes)
	if j < 0 {
		return nil, malformed("unterminated PEM header")
	}
	if label := strings.ReplaceAll(rest[:j], "+", " "); label != "CERTIFICATE" {
		return nil, malformed("PEM block %q is not a CERTIFICATE", label)
	}
	rest = rest[j+len(dashes):]
	k := strings.Index(rest, end)
	if k < 0 {
		return nil, malformed("no PEM END line")
	}
	body := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, rest[:k])
	der, err := decodeBase64(body)
	if err != nil {
		return nil, malformed("PEM body: %v", err)
	}
	return der, nil
}

// decodeBase64 decodes standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	if strings.HasSuffix(s, "=") {
		return base64.StdEncoding.Strict().DecodeString(s)
	}
	return base64.RawStdEncoding.Strict().DecodeString(s)
}

func parseDER(der []byte) (*x509.Certificate, error) {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, malformed("not an X.509 certificate: %v", err)
	}
	return c, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
