package shortener

// The Service wraps its Store (a bound on each call, spans); a wrapper
// hides every optional capability it does not forward, so each must
// implement all of them. These fail to compile when one is left out.
var (
	_ Editor          = timeoutStore{}
	_ VisitStatsStore = timeoutStore{}
	_ Editor          = tracedStore{}
	_ VisitStatsStore = tracedStore{}
)
