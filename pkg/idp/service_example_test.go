package idp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// A service calls another with its own token (client_credentials). The
// called API accepts it because the caller is one of its optional
// audiences.
func ExamplePlugin_ClientCredentials() {
	provider, err := idptest.Start(idptest.Options{ // your Keycloak in production
		Clients: []idptest.Client{{ID: "svc-reporter", Secret: "reporter-secret", ServiceAccount: true}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	ctx := context.Background()

	// The called API.
	api, err := idp.New(ctx, idp.Config{
		ServerURL: provider.URL, Realm: "demo", ClientID: "shortener",
		OptionalAudiences: []string{"svc-reporter"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer api.Close()
	apiSrv := httptest.NewServer(api.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		fmt.Fprintf(w, "hello %s", u.PreferredUsername)
	}))
	defer apiSrv.Close()

	// The calling service.
	svc, err := idp.New(ctx, idp.Config{
		ServerURL: provider.URL, Realm: "demo", ClientID: "svc-reporter", ClientSecret: "reporter-secret",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	_ = api.WaitReady(ctx)

	client := oauth2.NewClient(ctx, svc.ClientCredentials(ctx))
	resp, err := client.Get(apiSrv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 hello service-account-svc-reporter
}

// A handler calls a downstream API of the same realm with the caller's
// own token.
func ExampleForwardToken() {
	provider, err := idptest.Start(idptest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	p, err := idp.New(context.Background(), idp.Config{ServerURL: provider.URL, Realm: "demo", ClientID: "shortener"})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	_ = p.WaitReady(context.Background())

	downstream := httptest.NewServer(p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		fmt.Fprintf(w, "downstream saw %s", u.PreferredUsername)
	}))
	defer downstream.Close()

	client := &http.Client{Transport: idp.ForwardToken(nil)} // share it
	frontend := p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, downstream.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, "downstream failed", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	})

	req := httptest.NewRequest(http.MethodGet, "/report", nil)
	req.Header.Set("Authorization", "Bearer "+provider.Mint(provider.UserClaims("shortener", "alice")))
	rec := httptest.NewRecorder()
	frontend.ServeHTTP(rec, req)
	fmt.Println(rec.Body.String())
	// Output: downstream saw alice
}

// Mount the login routes; a browser is sent to the provider with state,
// nonce and PKCE.
func ExamplePlugin_Routes() {
	provider, err := idptest.Start(idptest.Options{
		Clients: []idptest.Client{{ID: "shortener", Secret: "shortener-secret"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	p, err := idp.New(context.Background(), idp.Config{
		ServerURL: provider.URL, Realm: "demo", ClientID: "shortener", ClientSecret: "shortener-secret",
		IncludeRoutes: true,
		RedirectURI:   "https://app.example/auth/callback", // registered at the provider
		SessionSecret: []byte("at least 32 bytes, from a secret store"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	_ = p.WaitReady(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/auth/", p.Routes()) // the full path: do not strip the prefix

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login?return_to=/reports", nil))
	loc, _ := rec.Result().Location()
	q := loc.Query()
	fmt.Println(rec.Code, loc.Path)
	fmt.Println(q.Get("response_type"), q.Get("code_challenge_method"), q.Get("redirect_uri"))
	// Output:
	// 302 /realms/demo/protocol/openid-connect/auth
	// code S256 https://app.example/auth/callback
}
