package visitinfo_test

import (
	"net/netip"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo/visitinfotest"
)

// Real User-Agent strings, as sent by the clients named.
var agentTable = []struct {
	name, ua string
	want     visitinfo.Agent
}{
	{"Chrome on Windows", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", visitinfo.Agent{Device: "desktop", Browser: "chrome"}},
	{"Firefox on Linux", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", visitinfo.Agent{Device: "desktop", Browser: "firefox"}},
	{"Safari on macOS", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", visitinfo.Agent{Device: "desktop", Browser: "safari"}},
	{"Edge on Windows", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", visitinfo.Agent{Device: "desktop", Browser: "edge"}},
	{"Safari on iPhone", "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", visitinfo.Agent{Device: "mobile", Browser: "safari"}},
	{"Chrome on Android phone", "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36", visitinfo.Agent{Device: "mobile", Browser: "chrome"}},
	{"Samsung Internet", "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36", visitinfo.Agent{Device: "mobile", Browser: "samsung browser"}},
	{"Safari on iPad", "Mozilla/5.0 (iPad; CPU OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Mobile/15E148 Safari/604.1", visitinfo.Agent{Device: "tablet", Browser: "safari"}},
	{"curl", "curl/8.5.0", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Python requests", "python-requests/2.32.3", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Googlebot", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Googlebot smartphone", "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Bingbot", "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Slack link preview", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Twitter card", "Twitterbot/1.0", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Facebook preview", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"Discord preview", "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"WhatsApp preview", "WhatsApp/2.23.20.0", visitinfo.Agent{Device: "bot", Browser: "other", Bot: true}},
	{"empty", "", visitinfo.Agent{Device: "other", Browser: "other", Bot: true}},
}

func TestParseAgents(t *testing.T) {
	p := visitinfo.NewParser()
	for _, tc := range agentTable {
		for range 2 { // the second time from the cache
			if got := p.Parse(tc.ua); got != tc.want {
				t.Errorf("%s: Parse(%q) = %+v, want %+v", tc.name, tc.ua, got, tc.want)
			}
		}
	}
}

func TestReferrerHost(t *testing.T) {
	for ref, want := range map[string]string{
		"https://News.Example.com/story?id=7&utm_source=x#frag": "news.example.com",
		"http://user:pw@example.org:8080/path":                  "example.org",
		"https://[2001:db8::1]:443/":                            "2001:db8::1",
		"https://example.com./":                                 "example.com",
		"android-app://com.slack/":                              "",
		"/relative/path":                                        "",
		"":                                                      "",
		"https://":                                              "",
		"not a url at all":                                      "",
		"https://exa mple.com/":                                 "",
	} {
		if got := visitinfo.ReferrerHost(ref); got != want {
			t.Errorf("ReferrerHost(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestGeoIPCountry(t *testing.T) {
	g, err := visitinfo.OpenGeoIPBytes(visitinfotest.CountryDBBytes(t, visitinfotest.Networks))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for ip, want := range map[string]string{
		"192.0.2.77":       "DE",
		"::ffff:192.0.2.1": "DE",
		"198.51.100.200":   "JP",
		"2001:db8:1:2::3":  "BR",
		"203.0.113.9":      "",
		"2001:db8:2::1":    "",
	} {
		if got := g.Country(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Country(%s) = %q, want %q", ip, got, want)
		}
	}
	if got := g.Country(netip.Addr{}); got != "" {
		t.Errorf("Country(invalid) = %q", got)
	}
	if _, err := visitinfo.OpenGeoIPBytes([]byte("not a database")); err == nil {
		t.Error("a corrupt database was accepted")
	}
}
