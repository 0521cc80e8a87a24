package idp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing/fstest"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// A site's own page for browser navigations refused by the middleware;
// programs keep getting problem+json. The files could as well be a
// directory (PagesConfig.Dir) or an embed.FS.
func ExampleNewPages() {
	pages, err := idp.NewPages(idp.PagesConfig{
		FS: fstest.MapFS{"error.html": {Data: []byte(
			`<!doctype html><title>{{.Title}} · {{.Name}}</title><style>{{.CSS}}</style>` +
				`<h1>{{.Status}}: {{.Title}}</h1><p>{{.Detail}}</p>`)}},
		Name:   "Example Corp",
		Colors: idp.PageColors{Accent: "#8e24aa"},
	})
	if err != nil {
		log.Fatal(err) // names the file and line of a template error
	}
	provider, err := idptest.Start(idptest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	p, err := idp.New(context.Background(), idp.Config{ServerURL: provider.URL, Realm: "demo", ClientID: "shortener", Pages: pages})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	h := p.Middleware(http.NotFoundHandler())

	for _, accept := range []string{"text/html", "application/json"} {
		r := httptest.NewRequest("GET", "/reports", nil)
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		body := w.Body.String()
		if i := strings.Index(body, "<h1>"); i >= 0 {
			body = body[i:]
		}
		fmt.Println(w.Code, w.Header().Get("Content-Type"), body)
	}
	// Output:
	// 401 text/html; charset=utf-8 <h1>401: Sign-in required</h1><p>a bearer token is required</p>
	// 401 application/problem+json {"type":"about:blank","title":"Unauthorized","status":401,"detail":"a bearer token is required"}
}
