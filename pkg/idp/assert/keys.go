package assert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// NotBeforeHeader is the PEM header of a key block giving the time (RFC
// 3339) from which the Signer may sign with the key; the key is published
// before. Absent: from the start.
const NotBeforeHeader = "Not-Before"

// ErrKeys: a key file that cannot be read or holds no usable key.
var ErrKeys = errors.New("assert: bad signing keys")

// Key is one signing key of a key set.
type Key struct {
	// Signer is the private key: *ecdsa.PrivateKey, *rsa.PrivateKey or
	// ed25519.PrivateKey.
	Signer crypto.Signer
	// NotBefore is when signing with the key may start. [zero: at once]
	NotBefore time.Time
}

// ParseKeys reads the PEM key blocks of data, in order, with their
// Not-Before headers. Blocks of other types are refused: a certificate or
// a public key in a signing-key file is a mistake worth reporting.
func ParseKeys(data []byte) ([]Key, error) {
	var keys []Key
	for n := 1; ; n++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var k any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			// SEC 1, as Helm's genPrivateKey "ecdsa" and `openssl
			// ecparam -genkey` write it.
			k, err = x509.ParseECPrivateKey(b.Bytes)
		default:
			return nil, fmt.Errorf("%w: block %d is %q: want PKCS #8 \"PRIVATE KEY\" (or SEC 1 \"EC PRIVATE KEY\") blocks", ErrKeys, n, b.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: block %d: %w", ErrKeys, n, err)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%w: block %d: unsupported key type %T", ErrKeys, n, k)
		}
		if _, err := dpop.KeyAlgorithm(s.Public()); err != nil {
			return nil, fmt.Errorf("%w: block %d: %w", ErrKeys, n, err)
		}
		key := Key{Signer: s}
		if nb, ok := b.Headers[NotBeforeHeader]; ok {
			t, err := time.Parse(time.RFC3339, nb)
			if err != nil {
				return nil, fmt.Errorf("%w: block %d: %s %q: want RFC 3339 (2026-12-01T00:00:00Z)", ErrKeys, n, NotBeforeHeader, nb)
			}
			key.NotBefore = t
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no PEM \"PRIVATE KEY\" block", ErrKeys)
	}
	return keys, nil
}

// EncodeKey returns k as a PEM "PRIVATE KEY" block, with its Not-Before
// header when set: what a key file holds.
func EncodeKey(k Key) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Signer)
	if err != nil {
		return nil, fmt.Errorf("assert: %w", err)
	}
	b := &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	if !k.NotBefore.IsZero() {
		b.Headers = map[string]string{NotBeforeHeader: k.NotBefore.UTC().Format(time.RFC3339)}
	}
	return pem.EncodeToMemory(b), nil
}

// LoadKeys reads the key file at path (see ParseKeys).
func LoadKeys(path string) ([]Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeys, err)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// LoadOrCreateKeys reads the key file at path, first creating it (mode
// 0600) with one new P-256 key when it does not exist. Replicas starting
// together on a shared volume agree: the file is created atomically, and
// whoever loses the race reads the winner's.
func LoadOrCreateKeys(path string) ([]Key, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := createKeyFile(path); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: creating %s: %w", ErrKeys, path, err)
		}
	}
	return LoadKeys(path)
}

func createKeyFile(path string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	data, err := EncodeKey(Key{Signer: k})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".assertion-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path) // fails with ErrExist when another replica won
}

// jwk is a public key as a JWK (RFC 7517) with its kid, alg and use.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// publicJWK returns pub as a JWK whose kid is its RFC 7638 thumbprint, so
// that every replica names a key alike without configuration.
func publicJWK(pub crypto.PublicKey) (jwk, error) {
	alg, err := dpop.KeyAlgorithm(pub)
	if err != nil {
		return jwk{}, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	var j jwk
	var canon string // RFC 7638: the required members, in lexical order
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		ecdh, err := k.ECDH()
		if err != nil {
			return jwk{}, err
		}
		raw := ecdh.Bytes() // 0x04 || X || Y, each size bytes
		j = jwk{Kty: "EC", Crv: k.Curve.Params().Name, X: b64(raw[1 : 1+size]), Y: b64(raw[1+size:])}
		canon = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, j.Crv, j.X, j.Y)
	case *rsa.PublicKey:
		j = jwk{Kty: "RSA", N: b64(k.N.Bytes()), E: b64(big.NewInt(int64(k.E)).Bytes())}
		canon = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, j.E, j.N)
	case ed25519.PublicKey:
		j = jwk{Kty: "OKP", Crv: "Ed25519", X: b64(k)}
		canon = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, j.X)
	}
	sum := sha256.Sum256([]byte(canon))
	j.Kid, j.Alg, j.Use = b64(sum[:]), alg, "sig"
	return j, nil
}
