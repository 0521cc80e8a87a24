package proxy

import (
	"bufio"
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// decodeIdentity reads an identity header value as the README tells an
// upstream to: a value starting with "=?" is one encoded-word, any other
// is the value itself. It also checks that mime.WordDecoder.DecodeHeader,
// which decodes encoded-words anywhere in a value, reads the same.
func decodeIdentity(t testing.TB, v string) string {
	t.Helper()
	var dec mime.WordDecoder
	got := v
	if strings.HasPrefix(v, "=?") {
		d, err := dec.Decode(v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		got = d
	}
	if d, err := dec.DecodeHeader(v); err != nil || d != got {
		t.Fatalf("%q: DecodeHeader reads %q (%v), Decode %q", v, d, err, got)
	}
	return got
}

// decodeRoles splits the roles header on "," and decodes each element,
// after checking that a list parser of RFC 9110 §5.6.1 (which drops empty
// elements, trims spaces around them and keeps quoted strings whole)
// finds the same elements: every reader gets the same roles.
func decodeRoles(t testing.TB, v string) []string {
	t.Helper()
	split := strings.Split(v, ",")
	if parsed := listElements(v); !slices.Equal(parsed, split) {
		t.Fatalf("roles %q: a list parser reads %q, a split on commas %q", v, parsed, split)
	}
	roles := make([]string, 0, len(split))
	for _, r := range split {
		roles = append(roles, decodeIdentity(t, r))
	}
	return roles
}

// listElements parses v as an RFC 9110 list (#element).
func listElements(v string) []string {
	var out []string
	var cur strings.Builder
	inQuote, escaped := false, false
	flush := func() {
		if e := strings.Trim(cur.String(), " \t"); e != "" {
			out = append(out, e)
		}
		cur.Reset()
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inQuote:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inQuote = false
			}
		case c == '"':
			inQuote = true
		case c == ',':
			flush()
			continue
		}
		cur.WriteByte(c)
	}
	flush()
	return out
}

// identityCases are verified identities HTTP would alter if they were sent
// raw: surrounding spaces and tabs, line breaks, NUL, non-ASCII, text
// that reads as an encoded-word, and roles a list parser would split,
// join or drop.
var identityCases = []struct {
	name, sub, username, email string
	roles                      []string
}{
	{"leading space", " alice", " alice", " alice@example.com", []string{" admin"}},
	{"trailing space", "alice ", "alice ", "alice@example.com ", []string{"admin "}},
	{"tabs", "\talice", "alice\t", "\talice@example.com\t", []string{"\tadmin", "admin\t"}},
	{"only spaces", " ", "  ", " \t ", []string{" ", "\t"}},
	{"obs-fold and injection", "alice\r\n admin", "a\r\nX-Auth-Request-Roles: admin", "a\n@example.com", []string{"a\r\n b"}},
	{"NUL and DEL", "a\x00b", "a\x7fb", "nul\x00@example.com", []string{"\x00"}},
	{"non-ASCII", "ü-1", "józef", "jó@exämple.com", []string{"ünïcode"}},
	{"encoded-word inside", "x =?UTF-8?B?YWRtaW4=?=", "=?UTF-8?B?YWRtaW4=?=", "a=?b@example.com", []string{"=?UTF-8?B?YWRtaW4=?=", "x =?UTF-8?Q?admin?="}},
	{"list syntax in roles", "a,b", `"quoted"`, "a,b@example.com", []string{"a,b", `"x`, `y"`, "", "admin, ops"}},
	{"interior spaces kept raw", "alice smith", "alice  smith", "alice@example.com", []string{"team a", "creator"}},
}

// The upstream gets exactly the verified identity: every value decodes to
// the claim, byte for byte; nothing is trimmed, split or joined.
func TestIdentityArrivesExactly(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	for _, tc := range identityCases {
		t.Run(tc.name, func(t *testing.T) {
			roles := append(slices.Clone(tc.roles), "creator")
			claims := idpSrv.UserClaims("shortener", "x", roles...)
			claims["sub"], claims["preferred_username"], claims["email"] = tc.sub, tc.username, tc.email
			resp, body := do(t, "POST", px.URL+"/shorten", idpSrv.Mint(claims), nil, "")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			checkIdentityHeaders(t, up.last(t).Header, tc.sub, tc.username, tc.email,
				append([]string{"offline_access", "default-roles-" + idpSrv.Realm}, roles...))
		})
	}
}

// Forward-auth verdicts carry the same values, read here from the answer
// as an ingress reads it off the wire.
func TestForwardAuthIdentityArrivesExactly(t *testing.T) {
	idpSrv := newProvider(t)
	cfg := testConfig(idpSrv, "http://upstream.invalid")
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"127.0.0.1/32"}}
	_, px := startProxy(t, cfg, Options{}, true)
	for _, tc := range identityCases {
		t.Run(tc.name, func(t *testing.T) {
			roles := append(slices.Clone(tc.roles), "creator")
			claims := idpSrv.UserClaims("shortener", "x", roles...)
			claims["sub"], claims["preferred_username"], claims["email"] = tc.sub, tc.username, tc.email
			resp, body := do(t, "GET", px.URL+"/auth/verify", idpSrv.Mint(claims),
				map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "POST"}, "")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			checkIdentityHeaders(t, resp.Header, tc.sub, tc.username, tc.email,
				append([]string{"offline_access", "default-roles-" + idpSrv.Realm}, roles...))
		})
	}
}

func checkIdentityHeaders(t *testing.T, h http.Header, sub, username, email string, roles []string) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Auth-Request-User":               sub,
		"X-Auth-Request-Preferred-Username": username,
		"X-Auth-Request-Email":              email,
	} {
		vs := h.Values(name)
		if len(vs) != 1 {
			t.Fatalf("%s: %q", name, vs)
		}
		if got := decodeIdentity(t, vs[0]); got != want {
			t.Errorf("%s = %q, decodes to %q, want %q", name, vs[0], got, want)
		}
	}
	vs := h.Values("X-Auth-Request-Roles")
	if len(vs) != 1 {
		t.Fatalf("roles: %q", vs)
	}
	if got := decodeRoles(t, vs[0]); !slices.Equal(got, roles) {
		t.Errorf("roles %q decode to %q, want %q", vs[0], got, roles)
	}
}

// FuzzHeaderValue: any identity value, sent as headerValue makes it and
// read back by an HTTP/1.1 server, decodes to itself; so does any list of
// roles sent as joinRoles makes it. "\x1e" separates the roles of the
// fuzz input.
func FuzzHeaderValue(f *testing.F) {
	for _, seed := range []string{"alice", " alice", "alice\t", "", " ", "a\r\n b", "ü", "=?UTF-8?B?YQ==?=", "x =?a?b?c?=",
		"a,b", `"q"`, "a\x1e\x1eb", " admin\x1eadmin ", "\x00", "\xff", "a\x1e"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := overTheWire(t, headerValue(v))
		if got != headerValue(v) {
			t.Fatalf("%q sent as %q arrives as %q", v, headerValue(v), got)
		}
		if d := decodeIdentity(t, got); d != v {
			t.Fatalf("%q arrives as %q, decodes to %q", v, got, d)
		}
		roles := strings.Split(v, "\x1e")
		joined := joinRoles(roles)
		got = overTheWire(t, joined)
		if got != joined {
			t.Fatalf("roles %q sent as %q arrive as %q", roles, joined, got)
		}
		if d := decodeRoles(t, got); !slices.Equal(d, roles) {
			t.Fatalf("roles %q arrive as %q, decode to %q", roles, got, d)
		}
	})
}

// overTheWire sends v as a header of an HTTP/1.1 request and returns what
// net/http's server reads, or fails when it refuses the request.
func overTheWire(t *testing.T, v string) string {
	t.Helper()
	raw := "GET / HTTP/1.1\r\nHost: upstream\r\nX-Auth-Request-User: " + v + "\r\n\r\n"
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("value %q: request refused: %v", v, err)
	}
	vs := r.Header.Values("X-Auth-Request-User")
	if len(vs) != 1 {
		t.Fatalf("value %q: %d header lines arrived: %q", v, len(vs), vs)
	}
	return vs[0]
}

// Behind the proxy, the shortener that trusts its headers cannot take a
// sub " user-alice" for user-alice, nor a role " admin" for admin: they
// arrive encoded, so neither reads another user's link.
func TestShortenerIdentityNotConfused(t *testing.T) {
	idpSrv := newProvider(t)
	store := memstore.New()
	t.Cleanup(func() { _ = store.Close() })
	svc, err := shortener.New(store, shortener.Options{BaseURL: "https://sho.rt"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{
		Owner:      shortener.OwnerFromHeader(DefaultUserHeader),
		Roles:      shortener.RolesFromHeader(DefaultRolesHeader),
		AdminRoles: []string{"admin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(h)
	t.Cleanup(upstream.Close)
	_, px := startProxy(t, testConfig(idpSrv, upstream.URL), Options{}, true)
	token := func(sub string, roles ...string) string {
		c := idpSrv.UserClaims("shortener", "x", roles...)
		c["sub"] = sub
		return idpSrv.Mint(c)
	}
	resp, body := do(t, "POST", px.URL+"/shorten", token("user-alice", "creator"),
		map[string]string{"Content-Type": "application/json"}, `{"url":"https://example.com/private"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var link struct {
		ShortCode string `json:"short_code"`
	}
	if err := json.Unmarshal([]byte(body), &link); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"the owner":             token("user-alice"),
		"admin":                 token("user-bob", "admin"),
		"sub \" user-alice\"":   token(" user-alice"),
		"sub \"user-alice\\t\"": token("user-alice\t"),
		"role \" admin\"":       token("user-mallory", " admin"),
		"role \"admin \"":       token("user-mallory", "admin "),
	} {
		resp, _ := do(t, "GET", px.URL+"/links/"+link.ShortCode, tok, nil, "")
		want := http.StatusNotFound
		if name == "the owner" || name == "admin" {
			want = http.StatusOK
		}
		if resp.StatusCode != want {
			t.Errorf("%s reads alice's link: %d, want %d", name, resp.StatusCode, want)
		}
	}
}
