package idp

import "github.com/idp-proxy/idp-proxy/internal/urlpath"

// CookieSet is what the plugin owns of an application's cookies and
// paths, as a proxy in front of the application needs it (Plugin.Cookies).
type CookieSet struct {
	// Names lists every cookie the plugin reads or sets: Config.CookieName
	// (the token cookie of TokenLocationCookie, which the login routes
	// also set), with IncludeRoutes LoginStateCookie, and with
	// Config.Session the session cookie and its chunks (Session). A proxy
	// keeps the application from setting or clearing them.
	Names []string
	// Session lists the names the session cookie may take (its chunks
	// included), none without Config.Session. They carry credentials: a
	// proxy removes them from what it forwards.
	Session []string
	// AuthPrefix is where the plugin's own routes are (see Routes):
	// Config.AuthPrefix with IncludeRoutes, else "".
	AuthPrefix string
}

// ownsPath reports whether path belongs to the plugin's own routes: path
// is AuthPrefix or below it ("/auth", "/auth/login"; not "/authx").
func (s CookieSet) ownsPath(path string) bool {
	return s.AuthPrefix != "" && urlpath.Under(path, s.AuthPrefix)
}

// Cookies returns the plugin's cookie set. Each call returns new slices.
func (p *Plugin) Cookies() CookieSet {
	s := CookieSet{Names: []string{p.cfg.CookieName}}
	if p.cfg.IncludeRoutes {
		s.Names = append(s.Names, LoginStateCookie)
		s.AuthPrefix = p.cfg.AuthPrefix
	}
	if p.sessions != nil {
		s.Names = append(s.Names, p.sessions.CookieNames()...)
		s.Session = p.sessions.CookieNames()
	}
	return s
}

// ownsPath is CookieSet.ownsPath without building the set.
func (p *Plugin) ownsPath(path string) bool {
	return p.cfg.IncludeRoutes && urlpath.Under(path, p.cfg.AuthPrefix)
}
