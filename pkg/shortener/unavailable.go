package shortener

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// storeRetryAfter is the Retry-After of an answer given while the store
// fails, in seconds: long enough not to add load to a store that is
// restarting, short enough that clients come back soon after it is up.
const storeRetryAfter = "5"

// writeStoreUnavailable answers a request that failed because the link
// store did (down, frozen past its deadline, or refusing): 503 naming the
// store, whatever the operation, so that clients and load balancers retry
// instead of reporting a bug. The cause is logged by the caller, never
// sent.
func writeStoreUnavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", storeRetryAfter)
	problem.Write(w, http.StatusServiceUnavailable, "the link store is unavailable; try again later")
}

// storeErrorLevel is the level at which a request's store failure is
// logged: an error, except the calls refused at once while the store does
// not answer (ErrStoreUnresponsive), which are many and say nothing new:
// the outage and its end are logged once each.
func storeErrorLevel(err error) slog.Level {
	if errors.Is(err, ErrStoreUnresponsive) {
		return slog.LevelDebug
	}
	return slog.LevelError
}
