package shortener_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

func ExampleService_Create() {
	ctx := context.Background()
	store := memstore.New()
	svc, _ := shortener.New(store, shortener.Options{BaseURL: "https://sho.rt", CustomCodes: true})
	defer svc.Close(ctx) // writes the last visit counts

	l, err := svc.Create(ctx, shortener.NewLink{
		URL:       "https://example.com/launch",
		Code:      "launch-2030",
		MaxVisits: 2,
		Owner:     "alice",
	})
	fmt.Println(svc.ShortURL(l.Code), err)

	_, err = svc.Create(ctx, shortener.NewLink{URL: "https://example.com/", Code: "launch-2030"})
	fmt.Println(errors.Is(err, shortener.ErrConflict))

	for range 3 {
		_, err := svc.Visit(ctx, "launch-2030", shortener.Visitor{})
		fmt.Println(err == nil, errors.Is(err, shortener.ErrGone))
	}
	// Output:
	// https://sho.rt/launch-2030 <nil>
	// true
	// true false
	// true false
	// false true
}

func ExampleService_List() {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	svc, _ := shortener.New(memstore.New(), shortener.Options{Now: func() time.Time { now = now.Add(time.Second); return now }})
	for _, u := range []string{"https://example.com/1", "https://example.com/2", "https://example.com/3"} {
		_, _ = svc.Create(ctx, shortener.NewLink{URL: u, Owner: "alice"})
	}
	// Newest first, two at a time.
	var after shortener.Cursor
	for {
		links, next, err := svc.List(ctx, "alice", after, 2)
		if err != nil {
			panic(err)
		}
		for _, l := range links {
			fmt.Println(l.URL)
		}
		if next.IsZero() {
			break
		}
		after = next
	}
	// Output:
	// https://example.com/3
	// https://example.com/2
	// https://example.com/1
}

func ExampleService_Delete() {
	ctx := context.Background()
	svc, _ := shortener.New(memstore.New(), shortener.Options{})
	l, _ := svc.Create(ctx, shortener.NewLink{URL: "https://example.com/", Owner: "alice"})

	err := svc.Delete(ctx, l.Code, shortener.Caller{ID: "bob"})
	fmt.Println(errors.Is(err, shortener.ErrNotFound)) // bob cannot even tell it exists
	fmt.Println(svc.Delete(ctx, l.Code, shortener.Caller{ID: "alice"}))
	_, err = svc.Visit(ctx, l.Code, shortener.Visitor{})
	fmt.Println(errors.Is(err, shortener.ErrNotFound))
	// Output:
	// true
	// <nil>
	// true
}

func ExampleRolesFromHeader() {
	roles := shortener.RolesFromHeader("X-Auth-Request-Roles")
	r := httptest.NewRequest("GET", "/links", nil)
	r.Header.Set("X-Auth-Request-Roles", "creator, shortener-admin")
	fmt.Println(roles(r))
	// Output: [creator shortener-admin]
}

func ExampleValidateCustomCode() {
	for _, code := range []string{"spring-sale", "ab", "links", "a/b"} {
		fmt.Println(code, shortener.ValidateCustomCode(code))
	}
	// Output:
	// spring-sale <nil>
	// ab shortener: invalid short_code: must be 3 to 64 characters long
	// links shortener: invalid short_code: is a reserved word
	// a/b shortener: invalid short_code: may only contain letters A-Z and a-z, digits, '_' and '-'
}

func ExampleQRSVG() {
	svg, err := shortener.QRSVG("https://sho.rt/launch-2030")
	fmt.Println(err, string(svg[:4]))
	// Output: <nil> <svg
}
