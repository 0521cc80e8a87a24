// Package visitinfo derives what the shortener's visit statistics keep
// about a redirect, and nothing more: the device class and browser family
// from the User-Agent (github.com/medama-io/go-useragent), a bot flag
// (github.com/x-way/crawlerdetect's crawler list, and the parser's own bot
// detection), the referrer's host, and the country of the client's
// address from a MaxMind-format GeoIP database
// (github.com/oschwald/maxminddb-golang). The User-Agent, the referrer's
// path and query and the address themselves are never returned.
package visitinfo

import (
	"net/url"
	"strings"
	"sync"

	"github.com/medama-io/go-useragent"
	"github.com/medama-io/go-useragent/agents"
	"github.com/x-way/crawlerdetect"
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
// a few hundred), so that the crawler list's regular expression runs once
// per distinct string. Create one with NewParser.
type Parser struct {
	ua    *useragent.Parser
	bots  *crawlerdetect.CrawlerDetect
	mu    sync.Mutex
	cache map[string]Agent
	size  int
}

// DefaultCacheSize is the number of distinct User-Agents a Parser
// remembers.
const DefaultCacheSize = 10_000

// NewParser returns a Parser with the libraries' built-in lists.
func NewParser() *Parser {
	return &Parser{
		ua:    useragent.NewParser(),
		bots:  crawlerdetect.New(),
		cache: make(map[string]Agent),
		size:  DefaultCacheSize,
	}
}

// Parse classifies ua.
func (p *Parser) Parse(ua string) Agent {
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	p.mu.Lock()
	a, ok := p.cache[ua]
	p.mu.Unlock()
	if ok {
		return a
	}
	a = p.parse(ua)
	p.mu.Lock()
	if len(p.cache) >= p.size {
		clear(p.cache) // crude, bounded: the popular strings come back at once
	}
	p.cache[strings.Clone(ua)] = a
	p.mu.Unlock()
	return a
}

func (p *Parser) parse(ua string) Agent {
	if strings.TrimSpace(ua) == "" {
		return Agent{Device: DeviceOther, Browser: BrowserOther, Bot: true}
	}
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
	if !a.Bot && p.bots.IsCrawler(ua) {
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
