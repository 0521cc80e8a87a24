package idpauth_test

import (
	"context"
	"log"
	"net/http"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/idpauth"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// A shortener that verifies access tokens itself: creating links needs
// the realm role creator, the /links API any valid token.
func ExampleHandlerOptions() {
	ctx := context.Background()
	plugin, err := idp.New(ctx, idp.Config{ServerURL: "https://sso.example.com", Realm: "demo", ClientID: "shortener"})
	if err != nil {
		log.Fatal(err)
	}
	defer plugin.Close()
	svc, err := shortener.New(memstore.New(), shortener.Options{BaseURL: "https://sho.rt"})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	o := idpauth.HandlerOptions(plugin, "creator")
	o.Page = true
	h, err := shortener.NewHandler(svc, o)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:8000", h))
}
