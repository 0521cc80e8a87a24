package cli

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// newDPoPProofCmd makes DPoP proofs (RFC 9449) for curl and scripts.
func newDPoPProofCmd() *cobra.Command {
	var keyFile, newKey, method, url, token, nonce string
	cmd := &cobra.Command{
		Use:   "dpop-proof",
		Short: "Print a DPoP proof for one request (or generate a DPoP key)",
		Long: `dpop-proof prints a fresh DPoP proof (RFC 9449: a JWT signed by the
client's key, new jti, issued now) for one request to --url with --method,
carrying the hash of --token (ath) and the server's --nonce when given, for
the DPoP header:

  idp-proxy dpop-proof --new-key dpop.pem        # once: an ES256 key; prints its thumbprint
  TOKEN=$(idp-proxy token -c config.yaml --dpop-key dpop.pem)
  curl -H "Authorization: DPoP $TOKEN" \
       -H "DPoP: $(idp-proxy dpop-proof --key dpop.pem --method GET --url https://api.example.com/x --token "$TOKEN")" \
       https://api.example.com/x

The key is a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA): ES256,
ES384 or ES512 by the curve, RS256 for RSA. A proof is good for one
request: make a new one for each.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if newKey != "" {
				jkt, err := writeDPoPKey(newKey)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), jkt)
				return err
			}
			if keyFile == "" || method == "" || url == "" {
				return errors.New("idp-proxy: dpop-proof needs --key, --method and --url (or --new-key FILE)")
			}
			key, err := readDPoPKey(keyFile)
			if err != nil {
				return err
			}
			proof, err := dpop.NewProof(key, dpop.ProofParams{Method: method, URL: url, AccessToken: token, Nonce: nonce})
			if err != nil {
				return fmt.Errorf("idp-proxy: dpop-proof: %w", err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), proof)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyFile, "key", "", "the client's private key (PEM)")
	f.StringVar(&newKey, "new-key", "", "generate an ES256 (P-256) key into this file (mode 0600, never overwritten) and print its thumbprint (cnf.jkt)")
	f.StringVar(&method, "method", "", "the request's method (htm)")
	f.StringVar(&url, "url", "", "the request's absolute URL as the client uses it (htu; the query is ignored)")
	f.StringVar(&token, "token", "", "the access token sent with the proof (its hash becomes ath)")
	f.StringVar(&nonce, "nonce", "", "the server's DPoP-Nonce, when it asked for one")
	return cmd
}

// readDPoPKey reads a PEM private key.
func readDPoPKey(file string) (crypto.Signer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("idp-proxy: DPoP key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("idp-proxy: DPoP key %s: no PEM block", file)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("idp-proxy: DPoP key %s: %w", file, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("idp-proxy: DPoP key %s: not a signing key", file)
	}
	return s, nil
}

// writeDPoPKey generates a P-256 key into file (which must not exist) and
// returns its thumbprint.
func writeDPoPKey(file string) (string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("idp-proxy: --new-key: %w", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return dpop.ThumbprintOfKey(&k.PublicKey)
}

// dpopTransport adds a fresh DPoP proof by key to every POST (the token
// endpoint's requests, RFC 9449 §5), so that the provider binds the token
// it issues to key.
type dpopTransport struct {
	key  crypto.Signer
	next http.RoundTripper
}

func (t dpopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost {
		return t.next.RoundTrip(r)
	}
	u := *r.URL
	u.RawQuery, u.Fragment = "", ""
	proof, err := dpop.NewProof(t.key, dpop.ProofParams{Method: r.Method, URL: u.String()})
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("DPoP", proof)
	return t.next.RoundTrip(r)
}
