package shortener

import "context"

// RedirectGetter is a Store method that a store may add for redirects
// served without the redirect cache (Options.CacheSize 0): GetRedirect is
// Get, except that it may leave Visits at 0 for a link without MaxVisits.
// A redirect does not need that count (such visits are counted in memory
// and written in batches), and a store that keeps it apart from the link
// (boltstore: a second B+tree look-up) saves reading it. For a link with
// MaxVisits, Visits must be as Get returns it: the redirect checks it
// before counting the visit.
type RedirectGetter interface {
	GetRedirect(ctx context.Context, code string) (Link, error)
}

// The wrappers pass GetRedirect on; the Service calls it only when the
// store underneath implements it.
var (
	_ RedirectGetter = timeoutStore{}
	_ RedirectGetter = tracedStore{}
)

// getRedirect is s's GetRedirect, or Get when s has none.
func getRedirect(ctx context.Context, s Store, code string) (Link, error) {
	if rg, ok := s.(RedirectGetter); ok {
		return rg.GetRedirect(ctx, code)
	}
	return s.Get(ctx, code)
}

func (s timeoutStore) GetRedirect(ctx context.Context, code string) (l Link, err error) {
	err = s.call(ctx, func(ctx context.Context) error {
		l, err = getRedirect(ctx, s.s, code)
		return err
	})
	return l, err
}

// GetRedirect is traced as Get: the same read for whoever follows the
// trace.
func (t tracedStore) GetRedirect(ctx context.Context, code string) (Link, error) {
	ctx, span := t.start(ctx, "Get")
	l, err := getRedirect(ctx, t.s, code)
	end(span, err)
	return l, err
}
