package authflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// writeProblem answers an RFC 9457 problem document.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	problem.Write(w, status, detail)
}

// writeUnavailable answers 503 while the provider has not been discovered
// or its keys are not loaded, naming the endpoint when the provider
// lacks one the route needs.
func (a *authRoutes) writeUnavailable(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "5")
	detail := "the identity provider is not available yet"
	if d := a.d.UnavailableDetail(err); d != "" {
		detail = d
	}
	problem.Write(w, http.StatusServiceUnavailable, detail)
}

// checkPOST refuses cross-site browser requests with 403.
func (a *authRoutes) checkPOST(w http.ResponseWriter, r *http.Request) bool {
	if err := a.d.CrossOrigin(r); err != nil {
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

// stateCookie is the login-state cookie; maxAge < 0 deletes it. Under a
// session cookie domain it is the domain's (stateDomain), so that the
// callback host reads a state set on an app's host.
func (a *authRoutes) stateCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: StateCookie, Value: value, Path: a.cookiePath, Domain: a.d.Site.stateDomain(r), MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode,
	}
}

// accessCookie is the access-token cookie read by Middleware with
// idp.TokenLocationCookie; maxAge < 0 deletes it.
func (a *authRoutes) accessCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: a.d.TokenCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode,
	}
}

// SanitizeErrorCode keeps an OAuth error code printable and short: RFC 6749
// limits it to %x20-21 / %x23-5B / %x5D-7E; we keep [A-Za-z0-9_.-] and
// answer "error" for anything else.
func SanitizeErrorCode(s string) string {
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
