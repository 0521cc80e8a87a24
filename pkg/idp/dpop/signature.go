package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
)

// algHash is the digest of a JWS alg (RFC 7518 §3.1); 0 for EdDSA, which
// signs the message itself.
func algHash(alg string) crypto.Hash {
	switch alg[len(alg)-3:] {
	case "256":
		return crypto.SHA256
	case "384":
		return crypto.SHA384
	case "512":
		return crypto.SHA512
	}
	return 0
}

// digest hashes the signing input with h without copying it.
func digest(h crypto.Hash, input string, buf *[64]byte) []byte {
	switch h {
	case crypto.SHA256:
		d := sha256.New()
		d.Write([]byte(input))
		return d.Sum(buf[:0])
	case crypto.SHA384:
		d := sha512.New384()
		d.Write([]byte(input))
		return d.Sum(buf[:0])
	default:
		d := sha512.New()
		d.Write([]byte(input))
		return d.Sum(buf[:0])
	}
}

// verifySignature checks the JWS signature sig of input with key, which
// fitsAlg has matched with alg.
func verifySignature(alg string, key crypto.PublicKey, input string, sig []byte) bool {
	if alg == "EdDSA" {
		pub := key.(ed25519.PublicKey)
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(pub, []byte(input), sig)
	}
	var buf [64]byte
	h := algHash(alg)
	sum := digest(h, input, &buf)
	switch alg[0] {
	case 'E':
		pub := key.(*ecdsa.PublicKey)
		size := (pub.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		var der [2*(3+67) + 3]byte
		asn1, ok := ecdsaDER(der[:0], sig[:size], sig[size:])
		return ok && ecdsa.VerifyASN1(pub, sum, asn1)
	case 'R':
		return rsa.VerifyPKCS1v15(key.(*rsa.PublicKey), h, sum, sig) == nil
	case 'P':
		// RFC 7518 §3.5: the salt is as long as the digest.
		return rsa.VerifyPSS(key.(*rsa.PublicKey), h, sum, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	}
	return false
}

// ecdsaDER encodes the JWS signature r||s (RFC 7518 §3.4) as the ASN.1
// SEQUENCE of two INTEGERs ecdsa.VerifyASN1 reads, without big.Int. A
// zero r or s is refused here (the curve arithmetic would refuse it too).
func ecdsaDER(dst, r, s []byte) ([]byte, bool) {
	r, s = trimZeros(r), trimZeros(s)
	if len(r) == 0 || len(s) == 0 {
		return nil, false
	}
	ilen := func(b []byte) int { return 2 + len(b) + int(b[0]>>7) }
	body := ilen(r) + ilen(s)
	dst = append(dst, 0x30)
	if body >= 0x80 {
		dst = append(dst, 0x81)
	}
	dst = append(dst, byte(body))
	for _, b := range [2][]byte{r, s} {
		dst = append(dst, 0x02, byte(len(b)+int(b[0]>>7)))
		if b[0]&0x80 != 0 {
			dst = append(dst, 0)
		}
		dst = append(dst, b...)
	}
	return dst, true
}

func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}
