package idp_test

import (
	"net/http"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// IsNavigation tells page loads from API and script calls.
func TestIsNavigation(t *testing.T) {
	for _, c := range []struct {
		method string
		hdr    map[string]string
		want   bool
	}{
		{"GET", map[string]string{"Accept": "text/html,*/*"}, true},
		{"HEAD", map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}, true},
		{"GET", map[string]string{"Accept": "application/json"}, false},
		{"GET", map[string]string{"Accept": "*/*"}, false},
		{"POST", map[string]string{"Accept": "text/html"}, false},
		{"GET", map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "cors"}, false},
		{"GET", map[string]string{"Accept": "text/html", "X-Requested-With": "XMLHttpRequest"}, false},
		{"GET", map[string]string{"Accept": "text/html", "Authorization": "Bearer x"}, false},
	} {
		r, _ := http.NewRequest(c.method, "http://x/", nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := idp.IsNavigation(r); got != c.want {
			t.Errorf("%s %v: %v, want %v", c.method, c.hdr, got, c.want)
		}
	}
}
