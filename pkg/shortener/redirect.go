package shortener

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// redirectCacheControl is sent with every redirect. A 302 may be cached
// when it carries freshness information, so we say explicitly: no shared
// cache (CDN, corporate proxy) may keep it, since a link may be owner-scoped
// or taken down later, and browsers must revalidate on every use so that a
// takedown applies at once. Revalidation costs one fast lookup.
const redirectCacheControl = "private, max-age=0"

const detailNotFound = "no link has this short code"

// serveRedirect answers GET /{code}. Malformed codes (a slash, a reserved
// word, the wrong alphabet or length) are a 404 without a store lookup.
func (h *Handler) serveRedirect(w http.ResponseWriter, r *http.Request) {
	// The path is "/" and the code, unescaped (r.PathValue is not set when
	// dispatch.serve answers without the mux).
	code := r.URL.Path[1:]
	var v *Visitor // nil: HEAD, which records nothing
	var vis Visitor
	if r.Method != http.MethodHead {
		v = &vis
		if h.svc.visits.stats != nil {
			h.visitor(v, r)
		}
	}
	l, location, err := h.svc.visit(r.Context(), code, v)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			problem.Write(w, http.StatusNotFound, detailNotFound)
		case errors.Is(err, ErrGone):
			writeGone(w, r)
		default:
			h.svc.log.Log(r.Context(), storeErrorLevel(err), "shortener: resolve link", "code", code, "err", err)
			writeStoreUnavailable(w)
		}
		return
	}
	// The values are set directly (not with Header.Set and not with
	// http.Redirect) so that Location is the stored URL byte for byte;
	// from the cache, the values are built once (no allocation).
	if location == nil {
		location = []string{l.URL}
	}
	hdr := w.Header()
	hdr["Location"] = location
	hdr["Cache-Control"] = h.redirectCacheControl
	w.WriteHeader(http.StatusFound)
}

const detailGone = "this link has expired or reached its maximum number of visits"

// goneHTML is the 410 page for browsers.
const goneHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Link gone</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5">
<h1>This link is gone</h1><p>It has expired or reached its maximum number of visits.</p></body></html>
`

// writeGone answers 410: an HTML page for browsers, problem+json for API
// clients.
func writeGone(w http.ResponseWriter, r *http.Request) {
	if !acceptsHTML(r.Header.Get("Accept")) {
		problem.Write(w, http.StatusGone, detailGone)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(goneHTML)))
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusGone)
	_, _ = io.WriteString(w, goneHTML)
}

// acceptsHTML reports whether an Accept header asks for HTML (browsers
// navigating), as opposed to API clients.
func acceptsHTML(accept string) bool {
	return accept != "" && mediaQuality(accept, "text/html") > 0 &&
		mediaQuality(accept, "text/html") >= mediaQuality(accept, "application/json")
}

// visitor fills v with the request's facts that the statistics classify:
// its User-Agent and Referer, and the country of the client's address,
// looked up here so that the address goes no further.
func (h *Handler) visitor(v *Visitor, r *http.Request) {
	if h.country != nil {
		v.Country = internCountry(h.country(h.clientIP(r)))
	}
	if ua := r.Header["User-Agent"]; len(ua) > 0 {
		v.UserAgent = ua[0]
	}
	if ref := r.Header["Referer"]; len(ref) > 0 {
		v.Referer = ref[0]
	}
}

// countryPairs holds every pair of upper-case letters ("AA", "AB", ...,
// "ZZ"), so that internCountry returns a country code without keeping
// the string a GeoIP lookup allocated for the request.
const countryPairs = "AAABACADAEAFAGAHAIAJAKALAMANAOAPAQARASATAUAVAWAXAYAZBABBBCBDBEBFBGBHBIBJBKBLBMBNBOBPBQBRBSBTBUBVBWBXBYBZCACBCCCDCECFCGCHCICJCKCLCMCNCOCPCQCRCSCTCUCVCWCXCYCZDADBDCDDDEDFDGDHDIDJDKDLDMDNDODPDQDRDSDTDUDVDWDXDYDZEAEBECEDEEEFEGEHEIEJEKELEMENEOEPEQERESETEUEVEWEXEYEZFAFBFCFDFEFFFGFHFIFJFKFLFMFNFOFPFQFRFSFTFUFVFWFXFYFZGAGBGCGDGEGFGGGHGIGJGKGLGMGNGOGPGQGRGSGTGUGVGWGXGYGZHAHBHCHDHEHFHGHHHIHJHKHLHMHNHOHPHQHRHSHTHUHVHWHXHYHZIAIBICIDIEIFIGIHIIIJIKILIMINIOIPIQIRISITIUIVIWIXIYIZJAJBJCJDJEJFJGJHJIJJJKJLJMJNJOJPJQJRJSJTJUJVJWJXJYJZKAKBKCKDKEKFKGKHKIKJKKKLKMKNKOKPKQKRKSKTKUKVKWKXKYKZLALBLCLDLELFLGLHLILJLKLLLMLNLOLPLQLRLSLTLULVLWLXLYLZMAMBMCMDMEMFMGMHMIMJMKMLMMMNMOMPMQMRMSMTMUMVMWMXMYMZNANBNCNDNENFNGNHNINJNKNLNMNNNONPNQNRNSNTNUNVNWNXNYNZOAOBOCODOEOFOGOHOIOJOKOLOMONOOOPOQOROSOTOUOVOWOXOYOZPAPBPCPDPEPFPGPHPIPJPKPLPMPNPOPPPQPRPSPTPUPVPWPXPYPZQAQBQCQDQEQFQGQHQIQJQKQLQMQNQOQPQQQRQSQTQUQVQWQXQYQZRARBRCRDRERFRGRHRIRJRKRLRMRNRORPRQRRRSRTRURVRWRXRYRZSASBSCSDSESFSGSHSISJSKSLSMSNSOSPSQSRSSSTSUSVSWSXSYSZTATBTCTDTETFTGTHTITJTKTLTMTNTOTPTQTRTSTTTUTVTWTXTYTZUAUBUCUDUEUFUGUHUIUJUKULUMUNUOUPUQURUSUTUUUVUWUXUYUZVAVBVCVDVEVFVGVHVIVJVKVLVMVNVOVPVQVRVSVTVUVVVWVXVYVZWAWBWCWDWEWFWGWHWIWJWKWLWMWNWOWPWQWRWSWTWUWVWWWXWYWZXAXBXCXDXEXFXGXHXIXJXKXLXMXNXOXPXQXRXSXTXUXVXWXXXYXZYAYBYCYDYEYFYGYHYIYJYKYLYMYNYOYPYQYRYSYTYUYVYWYXYYYZZAZBZCZDZEZFZGZHZIZJZKZLZMZNZOZPZQZRZSZTZUZVZWZXZYZZ"

// internCountry returns c as a substring of one shared string when it is
// two upper-case letters (an ISO 3166-1 alpha-2 code), else c.
func internCountry(c string) string {
	if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
		return c
	}
	i := (int(c[0]-'A')*26 + int(c[1]-'A')) * 2
	return countryPairs[i : i+2]
}
