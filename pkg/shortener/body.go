package shortener

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
)

// linkBody is the JSON object of POST /shorten and POST /links.
type linkBody struct {
	URL       string
	Code      string
	ExpiresAt time.Time
	MaxVisits int64
}

// Member names of linkBody.
const (
	memberURL       = "url"
	memberShortCode = "short_code"
	memberExpiresAt = "expires_at"
	memberMaxVisits = "max_visits"
)

// lookalikes maps spellings of our members (folded: lower case without
// '_', '-' and ' ') and the names other shorteners use for them (Shlink's
// customSlug, validUntil and maxVisits, Kutt's customurl and expire_in,
// YOURLS' keyword) to the member meant. POST /shorten ignores unknown
// members, as the specification's clients may send more than url, but
// refuses these: a custom code or a limit that is silently ignored is
// worse than an error.
var lookalikes = map[string]string{
	"url": memberURL, "longurl": memberURL, "target": memberURL, "href": memberURL,
	"shortcode": memberShortCode, "code": memberShortCode, "customcode": memberShortCode,
	"customslug": memberShortCode, "slug": memberShortCode, "customurl": memberShortCode,
	"keyword": memberShortCode, "alias": memberShortCode, "short": memberShortCode,
	"expiresat": memberExpiresAt, "expires": memberExpiresAt, "expiry": memberExpiresAt,
	"expire": memberExpiresAt, "expirein": memberExpiresAt, "expiresin": memberExpiresAt,
	"validuntil": memberExpiresAt, "expiration": memberExpiresAt,
	"maxvisits": memberMaxVisits, "maxvisit": memberMaxVisits, "maxclicks": memberMaxVisits,
	"visitlimit": memberMaxVisits, "limit": memberMaxVisits,
}

// fold lower-cases s and drops '_', '-' and ' '.
func fold(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r != '_' && r != '-' && r != ' ' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unknownMember returns the detail for an unknown member name.
func unknownMember(name, known string) string {
	shown := strconv.Quote(name)
	if len(shown) > 80 {
		shown = shown[:76] + `..."`
	}
	if m, ok := lookalikes[fold(name)]; ok && m != name {
		return "unknown member " + shown + "; did you mean \"" + m + "\"?"
	}
	return "unknown member " + shown + "; known members: " + known
}

// readObject reads body, a single JSON object, member by member in order:
// accept judges each name (a non-empty detail refuses the body, ignore
// skips the member), a name accepted twice is refused, and set reads the
// value of each accepted member. It returns how many members were
// accepted, or a non-empty user-facing detail. Member names are matched
// exactly (encoding/json would match "URL" too, which hides duplicates).
func readObject(body []byte, accept func(key string) (detail string, ignore bool), set func(key string, val json.RawMessage) string) (int, string) {
	const notObject = "request body must be a JSON object such as {\"url\":\"https://example.com/\"}"
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return 0, notObject
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, "request body is not valid JSON"
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return 0, "request body is not valid JSON"
		}
		detail, ignore := accept(key)
		if detail != "" {
			return 0, detail
		}
		if ignore {
			continue
		}
		if seen[key] {
			return 0, "the member \"" + key + "\" appears more than once"
		}
		seen[key] = true
		if detail := set(key, val); detail != "" {
			return 0, detail
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return 0, "request body is not valid JSON"
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, "request body must hold a single JSON object"
	}
	return len(seen), ""
}

// parseLinkBody reads a JSON object with the members url (a string,
// required), short_code (a string), expires_at (an RFC 3339 string) and
// max_visits (an integer ≥ 1); null stands for an absent optional member.
// It returns a non-empty user-facing detail when the body is not a single
// JSON object, a member is present twice, has the wrong type, or url is
// missing. Unknown members are refused when strict, and otherwise ignored
// unless they look like one of ours (see lookalikes). Member names are
// matched exactly (encoding/json would match "URL" too, which hides
// duplicates).
func parseLinkBody(body []byte, strict bool) (linkBody, string) {
	var out linkBody
	accept := func(key string) (string, bool) {
		switch key {
		case memberURL, memberShortCode, memberExpiresAt, memberMaxVisits:
			return "", false
		}
		if _, ok := lookalikes[fold(key)]; strict || ok {
			return unknownMember(key, linkMembers), false
		}
		return "", true
	}
	seenURL := false
	set := func(key string, val json.RawMessage) string {
		seenURL = seenURL || key == memberURL
		return out.set(key, val)
	}
	if _, detail := readObject(body, accept, set); detail != "" {
		return out, detail
	}
	if !seenURL {
		return out, "the member \"url\" is required"
	}
	return out, ""
}

// linkMembers are the members of a link's JSON object, for messages.
const linkMembers = "url, short_code, expires_at, max_visits"

// set stores the value of one known member.
func (b *linkBody) set(key string, val json.RawMessage) string {
	isNull := string(val) == "null"
	isString := len(val) > 0 && val[0] == '"'
	var str string
	if isString && json.Unmarshal(val, &str) != nil {
		isString = false
	}
	switch key {
	case memberURL:
		if !isString {
			return "the member \"url\" must be a string"
		}
		b.URL = str
	case memberShortCode:
		if isNull {
			return ""
		}
		if !isString {
			return "the member \"short_code\" must be a string"
		}
		if str == "" {
			return "invalid short_code: must be 3 to 64 characters long"
		}
		b.Code = str
	case memberExpiresAt:
		if isNull {
			return ""
		}
		if !isString {
			return "the member \"expires_at\" must be an RFC 3339 date-time string such as \"2030-01-31T12:00:00Z\""
		}
		t, err := time.Parse(time.RFC3339Nano, str)
		if err != nil || len(str) > 64 {
			return "invalid expires_at: must be an RFC 3339 date-time with a time zone, such as \"2030-01-31T12:00:00Z\""
		}
		b.ExpiresAt = t
	case memberMaxVisits:
		if isNull {
			return ""
		}
		n, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil || n < 1 || n > MaxMaxVisits {
			return "invalid max_visits: must be an integer from 1 to 9007199254740991"
		}
		b.MaxVisits = n
	}
	return ""
}
