package dpop

// keyCache is filled in later.
type keyCache struct{}

func newKeyCache() *keyCache { return &keyCache{} }
