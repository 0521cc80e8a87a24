package shortener

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
)

// visitKey is one statistics aggregate of the visitBatcher: the visits of
// one link in one second with the same dimensions. A redirect classifies
// its User-Agent and Referer from the caches of values seen before (no
// lock, no parsing); a value they do not know yet stays raw here (ua, or
// ref with refRaw) and the flush classifies it, once per distinct value,
// and drops it. The client's address never gets here, only its country.
type visitKey struct {
	code       string
	at         int64 // Unix seconds
	agent      visitinfo.Agent
	ua         string // raw User-Agent when !agentKnown
	ref        string // referrer host, or the raw Referer when refRaw
	country    string
	agentKnown bool
	refRaw     bool
}

// visitClassifier turns what a redirect knows of its visitor into the
// dimensions the statistics keep.
type visitClassifier struct {
	parser *visitinfo.Parser
	hosts  sync.Map // Referer value → its host
	nhosts atomic.Int64
}

func newVisitClassifier() *visitClassifier {
	return &visitClassifier{parser: visitinfo.NewParser()}
}

// key is the aggregate of a visit of code by v at the Unix second at,
// from the caches only.
func (c *visitClassifier) key(code string, v *Visitor, at int64) visitKey {
	k := visitKey{code: code, at: at, country: v.Country}
	if a, ok := c.parser.Cached(v.UserAgent); ok {
		k.agent, k.agentKnown = a, true
	} else {
		k.ua = v.UserAgent
	}
	if ref := v.Referer; ref != "" {
		if h, ok := c.hosts.Load(ref); ok {
			k.ref = h.(string)
		} else {
			k.ref, k.refRaw = ref, true
		}
	}
	return k
}

// event classifies an aggregate: what the store keeps of it. Called by
// one flush at a time.
func (c *visitClassifier) event(k *visitKey, n int64) VisitEvent {
	a := k.agent
	if !k.agentKnown {
		a = c.parser.Parse(k.ua)
	}
	host := k.ref
	if k.refRaw {
		host = c.referrerHost(k.ref)
	}
	return VisitEvent{
		Code: k.code, At: time.Unix(k.at, 0).UTC(), ReferrerHost: host,
		Device: a.Device, Browser: a.Browser, Country: k.country, Bot: a.Bot, Count: n,
	}
}

// maxHosts bounds the referrer cache.
const maxHosts = 10_000

// referrerHost is visitinfo.ReferrerHost, remembered (most visits come
// from a few referring pages), so that redirects find it without
// parsing. Called by one flush at a time.
func (c *visitClassifier) referrerHost(ref string) string {
	if h, ok := c.hosts.Load(ref); ok {
		return h.(string)
	}
	h := strings.Clone(visitinfo.ReferrerHost(ref))
	if len(ref) <= 2048 {
		if c.nhosts.Add(1) > maxHosts {
			c.hosts.Clear() // crude, bounded: the popular values come back at once
			c.nhosts.Store(1)
		}
		c.hosts.Store(strings.Clone(ref), h)
	}
	return h
}
