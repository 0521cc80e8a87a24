package shortener

// The Service wraps its Store (a bound on each call, spans). A wrapper
// holds the store in a field rather than embedding it, so that these fail
// to compile when it leaves a method out (an embedded one would pass the
// call through unbounded, untraced).
var (
	_ Store = timeoutStore{}
	_ Store = tracedStore{}
)
