package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

func Example() {
	// A test provider and an upstream that shows what the proxy tells it.
	provider, err := idptest.Start(idptest.Options{})
	if err != nil {
		panic(err)
	}
	defer provider.Close()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user=%s roles=%s", r.Header.Get("X-Auth-Request-User"), r.Header.Get("X-Auth-Request-Roles"))
	}))
	defer upstream.Close()

	// The caller builds the plugin (the identity provider's side) ...
	plugin, err := idp.New(context.Background(), idp.Config{
		ServerURL: provider.URL, Realm: provider.Realm, ClientID: "shortener",
	})
	if err != nil {
		panic(err)
	}
	defer plugin.Close()
	// ... and the proxy judges requests with it.
	cfg := proxy.DefaultConfig()
	cfg.Upstream.URL = upstream.URL
	cfg.Routes = []proxy.RouteConfig{
		{Match: "GET /health", Public: true},
		{Match: "POST /shorten", Roles: []string{"creator"}},
	}
	p, err := proxy.New(plugin, cfg, proxy.Options{})
	if err != nil {
		panic(err)
	}
	if err := plugin.WaitReady(context.Background()); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(p) // in production: cmd/idp-proxy serve
	defer srv.Close()

	for _, roles := range [][]string{{"creator"}, nil} {
		req, _ := http.NewRequest("POST", srv.URL+"/shorten", nil)
		req.Header.Set("Authorization", "Bearer "+provider.Mint(provider.UserClaims("shortener", "alice", roles...)))
		req.Header.Set("X-Auth-Request-User", "mallory") // stripped by the proxy
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
		if resp.StatusCode == 200 {
			fmt.Println(string(body))
		}
	}
	// Output:
	// 200 text/plain; charset=utf-8
	// user=user-alice roles=offline_access,default-roles-demo,creator
	// 403 application/problem+json
}
