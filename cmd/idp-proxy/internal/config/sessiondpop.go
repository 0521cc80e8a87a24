package config

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// sessionDPoPKeys reads session.dpop_key_file and
// session.dpop_accepted_key_files: the key the proxy binds its sessions'
// tokens to (RFC 9449), then the keys whose bound sessions still pass (the
// previous one after a rotation, the next one before it). None without
// dpop_key_file.
func (s Session) sessionDPoPKeys() ([]crypto.Signer, error) {
	if s.DPoPKeyFile == "" {
		if len(s.DPoPAcceptedKeyFiles) > 0 {
			return nil, keyErrorf(keys("session.dpop_accepted_key_files", "session.dpop_key_file"),
				"session.dpop_accepted_key_files needs session.dpop_key_file (the key the proxy signs with)")
		}
		return nil, nil
	}
	key, err := readPEMSigner(s.DPoPKeyFile)
	if err != nil {
		return nil, keyErrorf(keys("session.dpop_key_file"), "session.dpop_key_file: %w", err)
	}
	out := []crypto.Signer{key}
	for _, f := range s.DPoPAcceptedKeyFiles {
		k, err := readPEMSigner(f)
		if err != nil {
			return nil, keyErrorf(keys("session.dpop_accepted_key_files"), "session.dpop_accepted_key_files: %w", err)
		}
		out = append(out, k)
	}
	return out, nil
}

// readPEMSigner reads a PEM private key: PKCS #8 ("PRIVATE KEY", as
// `idp-proxy dpop-proof --new-key` and `openssl genpkey` write it), SEC 1
// ("EC PRIVATE KEY") or PKCS #1 ("RSA PRIVATE KEY").
func readPEMSigner(file string) (crypto.Signer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return parsePEMSigner(file, b)
}

// parsePEMSigner is readPEMSigner of the file's content b.
func parsePEMSigner(file string, b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", file)
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%s: a PEM %q block, want a private key", file, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %w", file, errNotSigner)
	}
	return s, nil
}

var errNotSigner = errors.New("not a signing key")
