package proxy

import "fmt"

// KeyError is a configuration problem of one setting, named by its key in
// idp-proxy's configuration file ("upstream.url", "idp.auth_prefix"), so
// that a program can say where the value came from (errors.As) without
// reading the message. Its message is Err's, which names the key already.
type KeyError struct {
	Key string
	// Also are the other settings the problem concerns, if any
	// ("upstream.url is required (unless forward_auth.enabled)").
	Also []string
	// Missing reports that the setting is required and not set, so a
	// caller can say where it may be set.
	Missing bool
	Err     error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// keyErrorf returns a "proxy: "-prefixed problem of the settings keys.
func keyErrorf(keys []string, format string, args ...any) error {
	return &KeyError{Key: keys[0], Also: keys[1:], Err: fmt.Errorf("proxy: "+format, args...)}
}

// missingKeyf is keyErrorf for a required setting that is not set.
func missingKeyf(keys []string, format string, args ...any) error {
	return &KeyError{Key: keys[0], Also: keys[1:], Missing: true, Err: fmt.Errorf("proxy: "+format, args...)}
}

// keys is keyErrorf's list of keys, for readability at the call sites.
func keys(k ...string) []string { return k }
