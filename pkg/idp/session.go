package idp

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// Sealed cookies.
//
// A sealed value is base64url(version || nonce || AES-256-GCM(payload)),
// with version || cookie name as additional authenticated data, so a value
// sealed for one cookie cannot be replayed as another. The AES key is derived from
// Config.SessionSecret with HKDF-SHA-256 and a purpose label, so the same
// secret can key other uses without key reuse. The payload is JSON carrying
// its own expiry, which is checked on opening: the browser's Max-Age is a
// hint, the sealed expiry is the rule.

const sealVersion byte = 1

var (
	// errSealed: a sealed value is malformed, forged, tampered with or
	// sealed with another secret. Deliberately without detail.
	errSealed = errors.New("idp: sealed value invalid")
	// errSealedExpired: a sealed value is authentic but past its expiry.
	errSealedExpired = errors.New("idp: sealed value expired")
)

// sealer seals and opens small values with AES-256-GCM. It seals with the
// key of the current secret and opens with it or with the key of a
// previous secret (key rotation). It is safe for concurrent use.
type sealer struct {
	aead cipher.AEAD   // the current key: seals and opens
	old  []cipher.AEAD // previous keys: open only
	max  int           // longest value open accepts
}

// newSealer derives the sealing key for purpose from secret, and the keys
// of the previous secrets that may still open values.
func newSealer(secret []byte, purpose string, previous ...[]byte) (*sealer, error) {
	s := &sealer{max: 8 << 10}
	for i, sec := range append([][]byte{secret}, previous...) {
		key, err := hkdf.Key(sha256.New, sec, nil, "idp-proxy/pkg/idp "+purpose, 32)
		if err != nil {
			return nil, fmt.Errorf("idp: derive sealing key: %w", err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("idp: sealing cipher: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("idp: sealing cipher: %w", err)
		}
		if i == 0 {
			s.aead = aead
		} else {
			s.old = append(s.old, aead)
		}
	}
	return s, nil
}

type sealedPayload struct {
	Exp  int64           `json:"exp"`
	Data json.RawMessage `json:"d"`
}

// seal encrypts v (JSON-encoded) for the cookie name, valid until exp.
func (s *sealer) seal(name string, v any, exp time.Time) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("idp: seal: %w", err)
	}
	plain, err := json.Marshal(sealedPayload{Exp: exp.Unix(), Data: data})
	if err != nil {
		return "", fmt.Errorf("idp: seal: %w", err)
	}
	ns := s.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plain)+s.aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return "", fmt.Errorf("idp: seal: %w", err)
	}
	out = s.aead.Seal(out, out[1:1+ns], plain, sealAAD(name))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

func sealAAD(name string) []byte { return append([]byte{sealVersion}, name...) }

// open authenticates and decrypts value sealed for the cookie name and
// decodes it into v. It fails with errSealed or errSealedExpired.
func (s *sealer) open(name, value string, now time.Time, v any) error {
	if len(value) > s.max {
		return errSealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	ns := s.aead.NonceSize()
	if err != nil || len(raw) < 1+ns+s.aead.Overhead() || raw[0] != sealVersion {
		return errSealed
	}
	plain, err := s.aead.Open(nil, raw[1:1+ns], raw[1+ns:], sealAAD(name))
	for _, old := range s.old {
		if err == nil {
			break
		}
		plain, err = old.Open(nil, raw[1:1+ns], raw[1+ns:], sealAAD(name))
	}
	if err != nil {
		return errSealed
	}
	var p sealedPayload
	if err := json.Unmarshal(plain, &p); err != nil {
		return errSealed
	}
	if !now.Before(time.Unix(p.Exp, 0)) {
		return errSealedExpired
	}
	if err := json.Unmarshal(p.Data, v); err != nil {
		return errSealed
	}
	return nil
}

// usedSet remembers single-use values (login states) until their expiry,
// so that a callback replayed with a copy of the state cookie is refused
// even though the cookie itself is still authentic. It is per process and
// bounded: when full of unexpired entries, half of them are forgotten
// (the provider's single-use authorization code remains the backstop).
type usedSet struct {
	max int

	mu   sync.Mutex
	seen map[string]time.Time // value -> expiry
}

func newUsedSet(max int) *usedSet {
	return &usedSet{max: max, seen: make(map[string]time.Time)}
}

// use marks v as used until exp and reports whether it was unused.
func (u *usedSet) use(v string, exp, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.seen[v]; ok && now.Before(e) {
		return false
	}
	if len(u.seen) >= u.max {
		for k, e := range u.seen {
			if !now.Before(e) {
				delete(u.seen, k)
			}
		}
		if len(u.seen) >= u.max {
			for k := range u.seen {
				if len(u.seen) < u.max/2 {
					break
				}
				delete(u.seen, k) // map order is random: forget arbitrary entries
			}
		}
	}
	u.seen[v] = exp
	return true
}

// maxReturnTo bounds the length of a return-to target.
const maxReturnTo = 2048

// safeReturnTo accepts s as a return-to target only when it is a relative
// path on this site: it starts with a single "/", and neither it nor any of
// its percent-decoded forms starts with "//" or "/\", contains a backslash,
// a control character, a dot segment ("/./", "/../") or a scheme. Browsers
// read "//evil.example" and "/\evil.example" as another host, and some
// servers and frameworks decode a path once more before redirecting, so
// "/%2F%2Fevil.example" is refused as well. It returns s unchanged when
// safe.
func safeReturnTo(s string) (string, bool) {
	if s == "" || len(s) > maxReturnTo || s[0] != '/' {
		return "", false
	}
	if _, err := url.PathUnescape(s); err != nil {
		return "", false // malformed escapes: refuse rather than guess
	}
	cur := s
	for level := 0; ; level++ {
		if !safePathForm(cur) {
			return "", false
		}
		dec, err := url.PathUnescape(cur)
		if err != nil || dec == cur {
			break // no further level of encoding
		}
		if level == 3 {
			return "", false // more than three levels: no legitimate path needs that
		}
		cur = dec
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return s, true
}

// safePathForm checks one (possibly decoded) form of a return-to target.
func safePathForm(s string) bool {
	if len(s) == 0 || s[0] != '/' {
		return false
	}
	if len(s) > 1 && (s[1] == '/' || s[1] == '\\') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	if !utf8.ValidString(s) {
		return false
	}
	// Dot segments in the path part: "/.//evil" normalises to "//evil".
	p, _, _ := strings.Cut(s, "?")
	p, _, _ = strings.Cut(p, "#")
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// writeProblem answers an RFC 9457 problem document.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	problem.Write(w, status, detail)
}

// writeUnavailable answers 503 while the provider has not been discovered
// or its keys are not loaded.
func writeUnavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	problem.Write(w, http.StatusServiceUnavailable, "the identity provider is not available yet")
}

// writeJSON answers v as JSON that no cache may keep (it carries tokens).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // cannot happen: only strings, numbers and bools
		problem.Write(w, http.StatusInternalServerError, "internal error")
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// checkPOST refuses cross-site browser requests with 403.
func (a *authRoutes) checkPOST(w http.ResponseWriter, r *http.Request) bool {
	if err := a.p.cop.Check(r); err != nil {
		writeProblem(w, http.StatusForbidden, "cross-site request refused")
		return false
	}
	return true
}

// decodeBody reads r's JSON body into v: 415 unless the content type is
// application/json, 413 over maxAuthBody, 400 when it is not one
// well-formed JSON value of v's shape. An absent body is accepted when
// allowEmpty.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) bool {
	if allowEmpty && r.ContentLength == 0 {
		return true
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeProblem(w, http.StatusUnsupportedMediaType, "the body must be application/json")
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAuthBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxAuthBody))
			return false
		}
		writeProblem(w, http.StatusBadRequest, "the body could not be read")
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return true
		}
		writeProblem(w, http.StatusBadRequest, "a JSON body is required")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		writeProblem(w, http.StatusBadRequest, "the body is not a valid JSON object of the expected shape")
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeProblem(w, http.StatusBadRequest, "the body holds more than one JSON value")
		return false
	}
	return true
}

// maxRefreshToken bounds a refresh token sent to logout and refresh.
const maxRefreshToken = 16 << 10

// validOpaqueToken accepts 1 to 16 KiB of visible ASCII: the shape of
// every refresh token in use (JWTs and opaque strings alike).
func validOpaqueToken(s string) bool {
	if s == "" || len(s) > maxRefreshToken {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (a *authRoutes) secure(r *http.Request) bool { return r.TLS != nil || a.httpsRedirect }

// stateCookie is the login-state cookie; maxAge < 0 deletes it.
func (a *authRoutes) stateCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: LoginStateCookie, Value: value, Path: a.cookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode,
	}
}

// accessCookie is the access-token cookie read by Middleware with
// TokenLocationCookie; maxAge < 0 deletes it.
func (a *authRoutes) accessCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: a.cfg.CookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode,
	}
}

// sanitizeErrorCode keeps an OAuth error code printable and short: RFC 6749
// limits it to %x20-21 / %x23-5B / %x5D-7E; we keep [A-Za-z0-9_.-] and
// answer "error" for anything else.
func sanitizeErrorCode(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	ok := s != ""
	for i := 0; i < len(s) && ok; i++ {
		c := s[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return "error"
	}
	return s
}

// providerLogout ends the provider session of refreshToken: a back-channel
// POST to the end-session endpoint (Keycloak ends the whole SSO session
// for client_id, client_secret and refresh_token), then RFC 7009
// revocation of the token. It reports whether at least one succeeded.
func (a *authRoutes) providerLogout(ctx context.Context, refreshToken string) bool {
	meta := a.p.keys.meta.Load()
	if meta == nil {
		meta = &providerMetadata{}
		meta.keycloakDefaults(a.p.issuer)
	}
	form := url.Values{"client_id": {a.cfg.ClientID}}
	if a.cfg.ClientSecret != "" {
		form.Set("client_secret", a.cfg.ClientSecret)
	}
	ended := false
	if meta.EndSessionEndpoint != "" {
		f := maps.Clone(form)
		f.Set("refresh_token", refreshToken)
		ended = a.postForm(ctx, "end session", meta.EndSessionEndpoint, f)
	}
	revoked := false
	if meta.RevocationEndpoint != "" {
		f := maps.Clone(form)
		f.Set("token", refreshToken)
		f.Set("token_type_hint", "refresh_token")
		revoked = a.postForm(ctx, "revocation", meta.RevocationEndpoint, f)
	}
	return ended || revoked
}

// postForm POSTs form to endpoint within HTTPTimeout and reports a 2xx
// answer. Failures are logged without the form (it holds secrets).
func (a *authRoutes) postForm(ctx context.Context, what, endpoint string, form url.Values) bool {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		a.cfg.Logger.Warn("idp: logout: "+what, "error", err)
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		a.cfg.Logger.Warn("idp: logout: "+what+": identity provider unreachable", "error", err)
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		a.cfg.Logger.Info("idp: logout: "+what+" refused by the identity provider", "status", resp.StatusCode)
		return false
	}
	return true
}
