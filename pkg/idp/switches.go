package idp

// Config's zero values mean "the default" for every field. What was once
// said with a negative value ("none", "off") has a switch of its own; the
// negative value is still accepted, as the switch's former spelling.

// deprecatedSpelling is a former spelling found in a Config, and the field
// to use instead, for New's warning.
type deprecatedSpelling struct{ field, instead string }

// deprecatedSpellings lists the former spellings c uses.
func deprecatedSpellings(c Config) []deprecatedSpelling {
	var out []deprecatedSpelling
	if c.Leeway < 0 {
		out = append(out, deprecatedSpelling{"Leeway", "NoLeeway: true (a negative Leeway)"})
	}
	if c.VerifiedCacheSize < 0 {
		out = append(out, deprecatedSpelling{"VerifiedCacheSize", "DisableVerifiedCache: true (a negative VerifiedCacheSize)"})
	}
	return out
}

// verifiedCacheSize is the size of the verified-token cache New makes: 0
// for none.
func (c Config) verifiedCacheSize() int {
	if c.DisableVerifiedCache {
		return 0
	}
	return c.VerifiedCacheSize
}
