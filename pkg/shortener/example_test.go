package shortener_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

func Example() {
	store := memstore.New() // or boltstore.Open / pgstore.Open
	defer store.Close()
	svc, err := shortener.New(store, shortener.Options{BaseURL: "https://sho.rt"})
	if err != nil {
		panic(err)
	}
	defer svc.Close(context.Background())
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{
		// Only behind a proxy that sets this header from a verified token:
		Owner: shortener.OwnerFromHeader("X-Auth-Request-User"),
	})
	if err != nil {
		panic(err)
	}
	// serve h with http.Server

	req := httptest.NewRequest("POST", "/shorten", strings.NewReader(`{"url":"https://example.com/docs?page=2"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Request-User", "alice")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code, strings.HasPrefix(rec.Header().Get("Location"), "https://sho.rt/"))

	code := strings.TrimPrefix(rec.Header().Get("Location"), "https://sho.rt/")
	link, _ := svc.Resolve(context.Background(), code)
	fmt.Println(link.URL, link.CreatedBy)

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+code, nil))
	fmt.Println(rec.Code, rec.Header().Get("Location"))

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/nope123", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output:
	// 201 true
	// https://example.com/docs?page=2 alice
	// 302 https://example.com/docs?page=2
	// 404 application/problem+json
}
