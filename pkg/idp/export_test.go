package idp

// SetBeforeRefresh makes p's session manager call f between reading a
// request's session and refreshing it, so that a test can order
// concurrent requests around a refresh.
func SetBeforeRefresh(p *Plugin, f func()) { p.sessions.BeforeRefresh = f }

// SetOnRefreshWait makes p's session manager call f each time a request
// blocks waiting for its session's refresh, so that a test can count
// them.
func SetOnRefreshWait(p *Plugin, f func()) { p.sessions.OnRefreshWait = f }

// SetFirstKeysWaitHook makes every key set of p call f when a request
// starts waiting for its first key set (Config.FirstKeysWait).
func SetFirstKeysWaitHook(p *Plugin, f func()) {
	for _, is := range p.issuers {
		is.keys.firstWait = f
	}
}

// OwnsPath is ownsPath, for the tests that check it against the routes.
func (s CookieSet) OwnsPath(path string) bool { return s.ownsPath(path) }
