// Package visitinfo derives what the shortener's visit statistics keep
// about a redirect, and nothing more: the device class and browser family
// from the User-Agent (github.com/medama-io/go-useragent), a bot flag
// (the crawler list of JayBizzle/Crawler-Detect as
// github.com/x-way/crawlerdetect compiles it, see crawler.go, and the
// parser's own bot detection), the referrer's host, and the country of the client's
// address from a MaxMind-format GeoIP database
// (github.com/oschwald/maxminddb-golang). The User-Agent, the referrer's
// path and query and the address themselves are never returned.
package visitinfo

import (
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/medama-io/go-useragent"
	"github.com/medama-io/go-useragent/agents"
)

// Device classes.
const (
	DeviceDesktop = "desktop"
	DeviceMobile  = "mobile"
	DeviceTablet  = "tablet"
	DeviceTV      = "tv"
	DeviceBot     = "bot"
	DeviceOther   = "other" // no User-Agent, or one the parser does not know
)

// BrowserOther is the browser family of User-Agents that are not one of
// the parser's browsers (curl, libraries, most bots).
const BrowserOther = "other"

// Agent is what the statistics keep of a User-Agent.
type Agent struct {
	// Device is one of the Device constants.
	Device string
	// Browser is the browser family in lower case ("chrome", "firefox",
	// "safari", "edge", "samsung browser", ...) or BrowserOther.
	Browser string
	// Bot reports a crawler, a link-preview fetcher, a monitoring probe or
	// an HTTP library; an empty User-Agent counts as a bot too.
	Bot bool
}

// maxUserAgent bounds the part of a User-Agent that is parsed: longer
// ones are cut (real ones are under 512 bytes).
const maxUserAgent = 1024

// Parser classifies User-Agents. It is safe for concurrent use and
// remembers up to CacheSize distinct User-Agents (most traffic comes from
// a few hundred), so that the parser and the crawler list's regular
// expressions run once per distinct string; Cached reads what it
// remembers without taking a lock. The User-Agent parser's data (about 5
// MiB and 140 ms to build) and the crawler list's regular expressions are
// built on the first Parse, not by NewParser: a process that never
// classifies a visit never pays for them. Create one with NewParser.
type Parser struct {
	uaOnce sync.Once
	ua     *useragent.Parser
	bots   crawlerMatcher
	cache  sync.Map // string → Agent
	cached atomic.Int64
	size   int64
}

// DefaultCacheSize is the number of distinct User-Agents a Parser
// remembers.
const DefaultCacheSize = 10_000

// NewParser returns a Parser with the libraries' built-in lists.
func NewParser() *Parser {
	return &Parser{size: DefaultCacheSize}
}

// Cached returns what Parse would return for ua when ua was parsed
// recently, without parsing; ok is false otherwise. It takes no lock and
// allocates nothing.
func (p *Parser) Cached(ua string) (a Agent, ok bool) {
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	v, ok := p.cache.Load(ua)
	if !ok {
		return Agent{}, false
	}
	return v.(Agent), true
}

// Parse classifies ua.
func (p *Parser) Parse(ua string) Agent {
	if a, ok := p.Cached(ua); ok {
		return a
	}
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	a := p.parse(ua)
	if p.cached.Add(1) > p.size {
		p.cache.Clear() // crude, bounded: the popular strings come back at once
		p.cached.Store(1)
	}
	p.cache.Store(strings.Clone(ua), a)
	return a
}

func (p *Parser) parse(ua string) Agent {
	if strings.TrimSpace(ua) == "" {
		return Agent{Device: DeviceOther, Browser: BrowserOther, Bot: true}
	}
	p.uaOnce.Do(func() { p.ua = useragent.NewParser() })
	u := p.ua.Parse(ua)
	a := Agent{Device: DeviceOther, Browser: BrowserOther}
	switch u.Device() {
	case agents.DeviceDesktop:
		a.Device = DeviceDesktop
	case agents.DeviceMobile:
		a.Device = DeviceMobile
	case agents.DeviceTablet:
		a.Device = DeviceTablet
	case agents.DeviceTV:
		a.Device = DeviceTV
	case agents.DeviceBot:
		a.Device, a.Bot = DeviceBot, true
	}
	if b := u.Browser(); b != "" {
		a.Browser = strings.ToLower(string(b))
	}
	if !a.Bot && p.bots.isCrawler(ua) {
		a.Bot = true
	}
	if a.Bot {
		a.Device = DeviceBot
		a.Browser = BrowserOther
	}
	return a
}

// maxHost bounds a referrer host (DNS names have at most 253 bytes).
const maxHost = 253

// ReferrerHost returns the lower-case host of a Referer header value,
// without port, user-info, path or query; "" when there is none or it is
// not an absolute http(s) URL.
func ReferrerHost(ref string) string {
	if ref == "" || len(ref) > 8192 {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if h == "" || len(h) > maxHost {
		return ""
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f {
			return "" // not a host name anyone would read
		}
	}
	return h
}
