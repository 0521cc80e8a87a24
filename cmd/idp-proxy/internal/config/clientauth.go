package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

// The values of tls.client_auth: whether the proxy's TLS listener asks
// for client certificates (mutual TLS), as crypto/tls's ClientAuthType.
const (
	// ClientAuthNone asks for none (tls.NoClientCert).
	ClientAuthNone = "none"
	// ClientAuthRequest asks for one and verifies it against
	// tls.client_ca_file when the client sends one; a client without one
	// is served all the same (tls.VerifyClientCertIfGiven). Rules with
	// client_cert and certificate-bound tokens then need one.
	ClientAuthRequest = "request"
	// ClientAuthRequire refuses the handshake of a client without a
	// certificate that tls.client_ca_file verifies
	// (tls.RequireAndVerifyClientCert).
	ClientAuthRequire = "require"
)

// ClientAuthType returns tls.client_auth as crypto/tls's value.
func (t TLS) ClientAuthType() (tls.ClientAuthType, error) {
	switch strings.ToLower(t.ClientAuth) {
	case "", ClientAuthNone:
		return tls.NoClientCert, nil
	case ClientAuthRequest:
		return tls.VerifyClientCertIfGiven, nil
	case ClientAuthRequire:
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("tls.client_auth %q: want none, request or require", t.ClientAuth)
}

// ClientCAs reads tls.client_ca_file: a PEM bundle of the certificate
// authorities that client certificates must chain to. Every PEM block of
// the file must be a certificate, and there must be one at least.
func (t TLS) ClientCAs() (*x509.CertPool, error) {
	b, err := os.ReadFile(t.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("tls.client_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if strings.TrimSpace(string(rest)) != "" && n == 0 {
				return nil, fmt.Errorf("tls.client_ca_file %s: not a PEM file", t.ClientCAFile)
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("tls.client_ca_file %s: a %s block: want CERTIFICATE blocks only", t.ClientCAFile, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("tls.client_ca_file %s: certificate %d: %w", t.ClientCAFile, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("tls.client_ca_file %s: no certificate in it", t.ClientCAFile)
	}
	return pool, nil
}

// ClientTLS returns the client authentication of the listener: the mode
// and the CA pool (nil with none). It reads tls.client_ca_file.
func (t TLS) ClientTLS() (tls.ClientAuthType, *x509.CertPool, error) {
	mode, err := t.ClientAuthType()
	if err != nil || mode == tls.NoClientCert {
		return mode, nil, err
	}
	pool, err := t.ClientCAs()
	return mode, pool, err
}

// validateClientAuth reports the problems of tls.client_auth and
// tls.client_ca_file that need no file read.
func (t TLS) validateClientAuth(bad, missing func([]string, string, ...any)) {
	mode, err := t.ClientAuthType()
	if err != nil {
		bad(keys("tls.client_auth"), "%v", err)
		return
	}
	switch {
	case mode == tls.NoClientCert && t.ClientCAFile != "":
		bad(keys("tls.client_ca_file", "tls.client_auth"), "tls.client_ca_file is used with tls.client_auth request or require; with none no client certificate is asked for")
	case mode != tls.NoClientCert && t.ClientCAFile == "":
		missing(keys("tls.client_ca_file", "tls.client_auth"), "tls.client_ca_file is required with tls.client_auth %s: the CAs that client certificates must chain to", t.ClientAuth)
	case mode != tls.NoClientCert && !t.Enabled():
		bad(keys("tls.client_auth", "tls.cert_file", "tls.acme.domains"), "tls.client_auth %s needs TLS on the listener (tls.cert_file and tls.key_file, or tls.acme)", t.ClientAuth)
	}
}

// clientCAProblem reads tls.client_ca_file when client authentication is
// on, and reports it as a *KeyError when it cannot be used.
func (t TLS) clientCAProblem() error {
	if mode, err := t.ClientAuthType(); err != nil || mode == tls.NoClientCert || t.ClientCAFile == "" {
		return nil
	}
	if _, err := t.ClientCAs(); err != nil {
		return &KeyError{Key: "tls.client_ca_file", Err: fmt.Errorf("proxy: %w", err)}
	}
	return nil
}
