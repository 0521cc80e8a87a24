package shortener

// Visitor is what a redirect knows of who follows it, for the visit
// statistics (Options.VisitStats): the statistics keep the device class,
// the browser family and the bot flag of UserAgent, the host of Referer,
// and Country; never the values themselves. The zero Visitor is a
// visitor nothing is known of.
type Visitor struct {
	// UserAgent is the User-Agent header.
	UserAgent string
	// Referer is the Referer header.
	Referer string
	// Country is the ISO 3166-1 alpha-2 code of the client's address
	// ("" when unknown): the address itself goes no further than the
	// caller.
	Country string
}
