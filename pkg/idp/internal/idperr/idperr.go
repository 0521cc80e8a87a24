// Package idperr holds the sentinel errors that package idp shares with
// its internal packages (sessions, the /auth flow): idp re-exports each
// under its documented name, so that errors.Is matches whichever package
// wrapped it.
package idperr

import (
	"errors"
	"fmt"
)

var (
	// ErrNoToken is idp.ErrNoToken.
	ErrNoToken = errors.New("idp: no access token")
	// ErrUnavailable is idp.ErrUnavailable.
	ErrUnavailable = errors.New("idp: keys not available")
	// ErrSessionStoreUnavailable is idp.ErrSessionStoreUnavailable; it wraps
	// ErrUnavailable.
	ErrSessionStoreUnavailable = fmt.Errorf("%w: the session store is unavailable", ErrUnavailable)
)
