package proxy

import (
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/directmap"
)

// ruleMemo remembers the rule that judged recent requests, by method,
// host and path: ServeMux's look-up (cleaning, host and method matching,
// a segment at a time), the excluded paths and the trailing-slash rule
// cost about 3,700 instructions a request, a look-up here a few hundred
// (bench/README.md). The rule a ruleSet picks depends on nothing else
// (the query, the headers and the body play no part), and a ruleSet never
// changes once compiled, so an entry stays right for as long as the set
// serves.
//
// It is direct-mapped (a slot keeps the last request hashed to it),
// without locks, and bounded: ruleMemoSlots entries, none for a path and
// host longer than ruleMemoMaxKey bytes together.
type ruleMemo struct {
	slots directmap.Table[ruleMemoEntry]
}

const (
	ruleMemoSlots  = 256
	ruleMemoMaxKey = 512
)

type ruleMemoEntry struct {
	method, host, path, rawPath string
	rule                        *rule
}

func newRuleMemo() *ruleMemo {
	return &ruleMemo{slots: directmap.Make[ruleMemoEntry](ruleMemoSlots)}
}

// match returns the rule rs.matchIn picks for r, from the memo when it
// judged the same method, host and path last in r's slot.
func (m *ruleMemo) match(rs *ruleSet, r *http.Request) *rule {
	u := r.URL
	if m == nil || r.Method == http.MethodConnect || len(u.Path)+len(r.Host) > ruleMemoMaxKey {
		// CONNECT is matched by the URL's host: never remembered.
		return rs.matchIn(rs.mux, rs.exclude, r)
	}
	slot := m.slots.String(u.Path)
	if e := slot.Load(); e != nil && e.path == u.Path && e.rawPath == u.RawPath && e.host == r.Host && e.method == r.Method {
		return e.rule
	}
	ru := rs.matchIn(rs.mux, rs.exclude, r)
	slot.Store(&ruleMemoEntry{method: r.Method, host: r.Host, path: u.Path, rawPath: u.RawPath, rule: ru})
	return ru
}
