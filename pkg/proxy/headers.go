package proxy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"sort"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// strippedAlways are request headers never forwarded as the client sent
// them, compared case-insensitively with '_' read as '-'. Besides these,
// every header starting with one of strippedPrefixes and the configured
// identity headers are stripped; the proxy then sets its own.
var strippedAlways = []string{
	// identity, as other proxies and frameworks name it
	"x-remote-user", "remote-user", "x-remote-email", "x-remote-groups",
	"x-user", "x-email", "x-auth-user", "x-authenticated-user", "x-userinfo",
	"x-id-token", "x-access-token",
	"x-webauth-user", "x-webauth-email", "x-webauth-name", // Grafana's auth proxy
	"x-authenticated-userid", "x-authenticated-scope", "x-consumer-id", "x-consumer-username", "x-consumer-custom-id", // Kong
	"x-ms-client-principal", "x-ms-client-principal-id", "x-ms-client-principal-name", "x-ms-client-principal-idp", // Azure App Service
	// request rewriting: never used by the proxy, never forwarded
	"x-original-url", "x-original-uri", "x-rewrite-url", "x-envoy-original-path",
	"x-http-method-override", "x-http-method", "x-method-override", "x-original-method",
	// client addresses
	"x-real-ip", "x-client-ip", "true-client-ip", "x-cluster-client-ip",
	// set by the proxy
	"x-request-id", "authorization", "forwarded",
	// a DPoP proof goes upstream only with the token it proves (dpop.go)
	"dpop",
}

// strippedPrefixes: the proxy's own, and the identity headers of managed
// authenticating proxies (AWS ALB, Google IAP, Cloudflare Access,
// Pomerium) that an upstream moved behind this proxy may still trust.
var strippedPrefixes = []string{"x-auth-request-", "x-forwarded-",
	"x-amzn-oidc-", "x-goog-authenticated-user-", "x-goog-iap-", "cf-access-", "x-pomerium-"}

// headerRules strips and sets the identity headers of forwarded requests.
type headerRules struct {
	strip          map[string]struct{}
	forwardToken   bool
	trustForwarded bool
	user           string // canonical names; "" = not sent
	username       string
	email          string
	roles          string
	claims         []claimHeader // headers.claims, by name
	memo           *identityMemo
	// cred is the upstream's credential mode; nil forwards the token
	// (forward). Set by build.
	cred *credential
}

// claimHeader is a header of headers.claims.
type claimHeader struct {
	name string // canonical
	path idp.ClaimPath
}

func newHeaderRules(c HeadersConfig) *headerRules {
	h := &headerRules{
		strip:          make(map[string]struct{}, len(strippedAlways)+4),
		forwardToken:   c.ForwardToken,
		trustForwarded: c.TrustForwarded,
		user:           canonical(c.User),
		username:       canonical(c.PreferredUsername),
		email:          canonical(c.Email),
		roles:          canonical(c.Roles),
		memo:           newIdentityMemo(),
	}
	for _, n := range strippedAlways {
		h.strip[n] = struct{}{}
	}
	for _, n := range []string{c.User, c.PreferredUsername, c.Email, c.Roles} {
		if n != "" {
			h.strip[foldName(n)] = struct{}{}
		}
	}
	for n, text := range c.Claims {
		p, err := idp.ParseClaimPath(text)
		if err != nil {
			continue // validate reports it; a header without a claim is never set
		}
		h.strip[foldName(n)] = struct{}{}
		h.claims = append(h.claims, claimHeader{name: canonical(n), path: p})
	}
	slices.SortFunc(h.claims, func(a, b claimHeader) int { return strings.Compare(a.name, b.name) })
	return h
}

func canonical(name string) string {
	if name == "" {
		return ""
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// foldName lower-cases name and reads '_' as '-'.
func foldName(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}

// stripped reports whether the client-sent header key must go, in any
// spelling: Go canonicalises "x-auth-request-user" but keeps
// "X_Auth_Request_User" as sent, and some upstreams (CGI, WSGI, PHP) read
// both as HTTP_X_AUTH_REQUEST_USER.
func (h *headerRules) stripped(key string) bool {
	var buf [96]byte
	if len(key) > len(buf) {
		return h.strippedSlow(key)
	}
	n := len(key)
	for i := 0; i < n; i++ {
		c := key[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == '_':
			c = '-'
		}
		buf[i] = c
	}
	folded := buf[:n]
	if _, ok := h.strip[string(folded)]; ok { // no allocation: map lookup with a converted key
		return true
	}
	for _, p := range strippedPrefixes {
		if len(folded) >= len(p) && string(folded[:len(p)]) == p {
			return true
		}
	}
	return false
}

func (h *headerRules) strippedSlow(key string) bool {
	f := foldName(key)
	if _, ok := h.strip[f]; ok {
		return true
	}
	for _, p := range strippedPrefixes {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// stripAll removes every stripped header from hdr.
func (h *headerRules) stripAll(hdr http.Header) {
	for k := range hdr {
		if h.stripped(k) {
			delete(hdr, k)
		}
	}
}

// setIdentity sets the identity headers, the claim headers and the token
// of id on hdr, which stripAll has cleaned. bearer is the client's
// Authorization header when it reads exactly "Bearer <raw>" (reused as
// is, see bearerValue), else nil. The email is sent only when the token's
// email_verified is true: where users may set their own address, an
// unverified "ceo@example.com" would otherwise be vouched for by the
// proxy. The values come from the memo (shared, see identityValues).
func (h *headerRules) setIdentity(hdr http.Header, id *idp.Identity, bearer []string) {
	if h.forwardToken && h.cred == nil && id.Raw != "" {
		if bearer == nil {
			bearer = []string{"Bearer " + id.Raw}
		}
		hdr["Authorization"] = bearer[:1:1]
	}
	if id.User == nil {
		return
	}
	v := h.memo.values(id, h.claims)
	for i, name := range [...]string{h.user, h.username, h.email, h.roles} {
		if name != "" && v.vals[i] != "" {
			hdr[name] = v.vals[i : i+1 : i+1]
		}
	}
	for i, c := range h.claims {
		if v.claims[i] != "" {
			hdr[c.name] = v.claims[i : i+1 : i+1]
		}
	}
}

// claimHeaderValue is the value of a claim header: the claim's values,
// each as roleValue makes a role (so that splitting on "," and decoding
// each element gives them back exactly), comma-separated; "" (no header)
// for an absent or empty claim or one of another shape.
func claimHeaderValue(p *idp.TokenPayload, path idp.ClaimPath) string {
	vals, err := p.ClaimValues(path)
	if err != nil || len(vals) == 0 {
		return ""
	}
	texts := make([]string, len(vals))
	for i, v := range vals {
		texts[i] = v.Text
	}
	return joinRoles(texts)
}

// bearerValue returns the request's Authorization header when it is
// exactly "Bearer " + raw, so that forwarding it costs no allocation.
func bearerValue(in http.Header, raw string) []string {
	if v := in["Authorization"]; len(v) == 1 && len(v[0]) == len("Bearer ")+len(raw) &&
		v[0][:len("Bearer ")] == "Bearer " && v[0][len("Bearer "):] == raw {
		return v
	}
	return nil
}

// headerValue returns v as an identity header carries it: v itself when
// HTTP delivers it byte for byte, else its RFC 2047 encoded-word
// "=?UTF-8?B?<base64>?=" (see needsEncoding). The upstream decodes a value
// that starts with "=?" whole (mime.WordDecoder's Decode, or DecodeHeader:
// both read every value the same) and takes any other as it is, so it
// gets exactly the verified value; nothing is trimmed, dropped or
// rewritten on the way.
func headerValue(v string) string {
	if needsEncoding(v) {
		return encodedWord(v)
	}
	return v
}

func encodedWord(v string) string {
	return "=?UTF-8?B?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// needsEncoding reports whether v could reach the upstream as another
// value, sent raw:
//   - SP or HTAB first or last: HTTP trims a field value (RFC 9110 §5.5),
//     so " alice" would arrive as "alice";
//   - a control character (CR and LF: header injection and obs-fold; NUL;
//     HTAB anywhere) or DEL: refused or rewritten by servers;
//   - a byte of 0x80 or more: read as Latin-1 (obs-text) or refused;
//   - "=?" anywhere: mime.WordDecoder.DecodeHeader decodes encoded-words
//     inside a value ("x =?UTF-8?B?YWRtaW4=?=" reads "x admin"), and a
//     value starting with "=?" would read as encoded.
//
// The identity memo (identityValues) calls it once per verified user, never
// per request.
func needsEncoding(v string) bool {
	if v == "" {
		return false
	}
	if c := v[0]; c == ' ' || c == '\t' {
		return true
	}
	if c := v[len(v)-1]; c == ' ' || c == '\t' {
		return true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f {
			return true
		}
	}
	return strings.Contains(v, "=?")
}

// joinRoles joins roles with ","; each role is sent as roleValue makes it,
// so that splitting on "," and decoding each element gives the roles back
// exactly.
func joinRoles(roles []string) string {
	if len(roles) == 1 {
		return roleValue(roles[0])
	}
	var b strings.Builder
	n := len(roles)
	for _, r := range roles {
		n += len(r)
	}
	b.Grow(n)
	for i, r := range roles {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(roleValue(r))
	}
	return b.String()
}

// roleValue is one element of the roles list: encoded when headerValue
// would encode it, and also when a list parser would change it: a comma
// (it would split), a double quote (a quoted-string aware parser would
// join it with its neighbours, RFC 9110 §5.6.4), or an empty role (list
// parsers drop empty elements, RFC 9110 §5.6.1).
func roleValue(r string) string {
	if r == "" || strings.ContainsAny(r, ",\"") || needsEncoding(r) {
		return encodedWord(r)
	}
	return r
}

// validate checks the header names; prefix is the Go path of c
// ("Headers", "Upstreams[2].Headers").
func (c HeadersConfig) validate(prefix string) []error {
	var errs []error
	seen := map[string]string{}
	for _, f := range []struct{ key, name string }{
		{prefix + ".User", c.User},
		{prefix + ".PreferredUsername", c.PreferredUsername},
		{prefix + ".Email", c.Email},
		{prefix + ".Roles", c.Roles},
	} {
		if f.name == "" {
			continue
		}
		if !isToken(f.name) {
			errs = append(errs, fieldErrorf(fields(f.key), "%s %q is not a valid header name", named(f.key), f.name))
			continue
		}
		folded := foldName(f.name)
		if prev, dup := seen[folded]; dup {
			errs = append(errs, fieldErrorf(fields(f.key, prev), "%s %q is the same header as %s", named(f.key), f.name, named(prev)))
		}
		seen[folded] = f.key
		switch {
		case folded == "authorization", folded == "host", folded == "cookie", folded == "x-request-id",
			folded == "connection", folded == "forwarded", strings.HasPrefix(folded, "x-forwarded-"):
			errs = append(errs, fieldErrorf(fields(f.key), "%s %q is reserved: choose another header name", named(f.key), f.name))
		}
	}
	names := make([]string, 0, len(c.Claims))
	for n := range c.Claims {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		key := prefix + ".Claims[" + n + "]"
		if err := CheckClaimHeader(n, c.Claims[n]); err != nil {
			errs = append(errs, fieldErrorf(fields(key), "%s: %w", named(prefix+".Claims"), err))
			continue
		}
		folded := foldName(n)
		if prev, dup := seen[folded]; dup {
			errs = append(errs, fieldErrorf(fields(key, prev), "%s: %q is the same header as %s: a header carries one value", named(prefix+".Claims"), n, named(prev)))
			continue
		}
		seen[folded] = key
	}
	return errs
}

// reservedHeader says why the header (folded by foldName) cannot carry a
// claim: a hop-by-hop header, one that frames or routes the request, or
// one the proxy sets itself; "" when it can.
func reservedHeader(folded string) string {
	switch folded {
	case "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
		"te", "trailer", "transfer-encoding", "upgrade":
		return "a hop-by-hop header"
	case "host", "content-length", "content-type", "content-encoding", "expect", "cookie", "range", "if-match",
		"if-none-match", "if-modified-since", "if-unmodified-since", "if-range":
		return "a header that frames or selects the request"
	case "authorization", "x-request-id", "forwarded", "x-real-ip":
		return "set by the proxy"
	}
	if strings.HasPrefix(folded, "x-forwarded-") {
		return "set by the proxy"
	}
	return ""
}

// stripCookie removes the cookie name from the Cookie headers of h: in
// COOKIE mode the token reaches the upstream only verified, as
// Authorization (when headers.forward_token is on).
func stripCookie(h http.Header, name string) { stripCookies(h, []string{name}) }

// stripCookies removes the cookies names (credentials: the token cookie,
// the session cookie and its chunks) from the Cookie headers of h, in one
// pass.
func stripCookies(h http.Header, names []string) {
	vals := h["Cookie"]
	kept := vals[:0:0]
	changed := false
	for _, v := range vals {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(v, n) }) {
			kept = append(kept, v)
			continue
		}
		var b strings.Builder
		for part := range strings.SplitSeq(v, ";") {
			pair := strings.TrimSpace(part)
			// net/http (and most servers) trim the name: "at =x" is "at".
			if k, _, _ := strings.Cut(pair, "="); slices.Contains(names, strings.TrimSpace(k)) {
				changed = true
				continue
			}
			if pair == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(pair)
		}
		if b.Len() > 0 {
			kept = append(kept, b.String())
		}
	}
	if !changed {
		return
	}
	if len(kept) == 0 {
		delete(h, "Cookie")
		return
	}
	h["Cookie"] = kept
}

// CheckClaimHeader reports why a header of headers.claims cannot carry the
// claim at path: a name that is not a header name, or is a hop-by-hop
// header, one that frames or selects the request, or one the proxy sets;
// a path that does not parse (see idp.ClaimPath). It does not know the
// configured identity headers: Compile also refuses a claim header that
// is one of them. nil when the pair is fine; a problem of the name
// matches ErrHeaderName (errors.Is), one of the path does not.
func CheckClaimHeader(name, path string) error {
	if !isToken(name) {
		return headerNameError(fmt.Sprintf("%q is not a valid header name", name))
	}
	if reason := reservedHeader(foldName(name)); reason != "" {
		return headerNameError(fmt.Sprintf("%q is %s: choose another header name (X-Auth-Request-... is the convention)", name, reason))
	}
	if path == "" {
		return fmt.Errorf("%q names no claim: give a claim path (tid, groups, https://example.com/roles)", name)
	}
	if _, err := idp.ParseClaimPath(path); err != nil {
		return fmt.Errorf("%q: %w; names with '.' are written [\"a.b\"], see README, Claim mapping", name, err)
	}
	return nil
}

// ErrHeaderName is matched (errors.Is) by CheckClaimHeader's problems of
// the header name, as opposed to those of the claim path, so that a
// caller can point at the one to fix.
var ErrHeaderName = errors.New("proxy: not a usable header name")

// headerNameError is a problem of a header name; its message says which.
type headerNameError string

func (e headerNameError) Error() string        { return string(e) }
func (e headerNameError) Is(target error) bool { return target == ErrHeaderName }
