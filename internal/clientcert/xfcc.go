package clientcert

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"net/url"
	"strings"
)

// Envoy's X-Forwarded-Client-Cert: elements separated by commas, each
// the pairs key=value of one proxy separated by semicolons, a value in
// double quotes when it holds ',', ';' or '=' (a quote inside escaped as
// \"); keys are case-insensitive. A proxy appends its element at the end
// (forward_client_cert_details: APPEND_FORWARD) or replaces the header
// with it (SANITIZE_SET), so the last element is the one the nearest
// proxy (the trusted peer) wrote about its own client; the earlier ones
// came through it from farther away, possibly from the client itself.

// XFCCElement is the part of one XFCC element that is read.
type XFCCElement struct {
	// Cert is the Cert value, URL-decoded (PEM); "" when absent.
	Cert string
	// Chain is the Chain value, URL-decoded (PEM blocks, the client's
	// first); "" when absent.
	Chain string
	// Hash is the Hash value: the hex SHA-256 of the certificate's DER.
	Hash string
}

// ParseXFCC reads the client certificate from an X-Forwarded-Client-Cert
// value: its last element's Cert (or, without one, the first certificate
// of its Chain). A Hash in that element must be the certificate's.
func ParseXFCC(value string) (*x509.Certificate, error) {
	el, err := LastXFCCElement(value)
	if err != nil {
		return nil, err
	}
	pemText := el.Cert
	if pemText == "" {
		pemText = el.Chain
	}
	if pemText == "" {
		return nil, malformed("the last X-Forwarded-Client-Cert element has no Cert (Envoy: set_current_client_cert_details cert: true)")
	}
	der, err := pemBody(pemText)
	if err != nil {
		return nil, err
	}
	if el.Hash != "" {
		want, err := hex.DecodeString(el.Hash)
		sum := sha256.Sum256(der)
		if err != nil || subtle.ConstantTimeCompare(want, sum[:]) != 1 {
			return nil, malformed("the X-Forwarded-Client-Cert Hash is not the SHA-256 of its Cert")
		}
	}
	return parseDER(der)
}

// LastXFCCElement parses the last element of an X-Forwarded-Client-Cert
// value. Duplicate Cert, Chain or Hash keys, unterminated quotes and
// pairs without '=' are malformed.
func LastXFCCElement(value string) (XFCCElement, error) {
	start, inQuote, escaped := 0, false, false
	for i := 0; i < len(value); i++ {
		c := value[i]
		switch {
		case escaped:
			escaped = false
		case inQuote && c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == ',':
			start = i + 1
		}
	}
	if inQuote {
		return XFCCElement{}, malformed("unterminated quoted X-Forwarded-Client-Cert value")
	}
	return parseXFCCElement(value[start:])
}

// parseXFCCElement parses one element (no comma outside quotes).
func parseXFCCElement(s string) (XFCCElement, error) {
	var el XFCCElement
	var seen [3]bool
	if strings.TrimSpace(s) == "" {
		return el, malformed("empty X-Forwarded-Client-Cert element")
	}
	for s != "" {
		pair, rest := s, ""
		inQuote, escaped := false, false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if escaped {
				escaped = false
				continue
			}
			if inQuote && c == '\\' {
				escaped = true
				continue
			}
			if c == '"' {
				inQuote = !inQuote
				continue
			}
			if !inQuote && c == ';' {
				pair, rest = s[:i], s[i+1:]
				break
			}
		}
		s = rest
		key, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || key == "" || strings.ContainsAny(key, "\" \t") {
			return el, malformed("X-Forwarded-Client-Cert pair %.40q is not key=value", pair)
		}
		v, err := unquoteXFCC(val)
		if err != nil {
			return el, err
		}
		var dst *string
		var idx int
		switch {
		case strings.EqualFold(key, "Cert"):
			dst, idx = &el.Cert, 0
		case strings.EqualFold(key, "Chain"):
			dst, idx = &el.Chain, 1
		case strings.EqualFold(key, "Hash"):
			el.Hash, idx = v, 2
		default:
			continue // By, Subject, URI, DNS: the certificate says it all
		}
		if seen[idx] {
			return el, malformed("X-Forwarded-Client-Cert element repeats %s", key)
		}
		seen[idx] = true
		if dst != nil {
			u, err := url.PathUnescape(v)
			if err != nil {
				return el, malformed("X-Forwarded-Client-Cert %s is not URL-encoded: %v", key, err)
			}
			*dst = u
		}
	}
	return el, nil
}

// unquoteXFCC returns a value without its double quotes and escapes.
func unquoteXFCC(v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		if strings.Contains(v, `"`) {
			return "", malformed("stray quote in an X-Forwarded-Client-Cert value")
		}
		return v, nil
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", malformed("stray quote in an X-Forwarded-Client-Cert value")
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", malformed("unterminated quoted X-Forwarded-Client-Cert value")
}
