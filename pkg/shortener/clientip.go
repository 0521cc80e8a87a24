package shortener

import (
	"net/http"
	"net/netip"
	"strings"
)

// RemoteIP returns the address of the request's peer (RemoteAddr), or the
// zero Addr.
func RemoteIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// ClientIPFromHeader returns a HandlerOptions.ClientIP hook that reads the
// client's address from the header name as a proxy in front of the
// service sets it: the last address of the last value (X-Forwarded-For
// lists the addresses each proxy saw, and the last one was added by the
// proxy next to this service; the earlier ones are whatever the client
// sent). Without a valid address there it falls back to RemoteIP. Use it
// only behind a proxy that sets the header.
func ClientIPFromHeader(name string) func(*http.Request) netip.Addr {
	key := http.CanonicalHeaderKey(name)
	return func(r *http.Request) netip.Addr {
		vs := r.Header[key]
		if len(vs) == 0 {
			return RemoteIP(r)
		}
		v := vs[len(vs)-1]
		if i := strings.LastIndexByte(v, ','); i >= 0 {
			v = v[i+1:]
		}
		a, err := netip.ParseAddr(strings.TrimSpace(v))
		if err != nil {
			return RemoteIP(r)
		}
		return a.Unmap()
	}
}
