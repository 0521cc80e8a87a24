package proxy

import (
	"fmt"
	"slices"
)

// KeyError is a configuration problem of one setting, named by its key in
// idp-proxy's configuration file ("upstream.url", "idp.auth_prefix"), so
// that a program can say where the value came from (errors.As) without
// reading the message. Its message is Err's, which names the key already.
// A problem of two settings nests one KeyError in the other.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// keyErrorf returns a "proxy: "-prefixed problem of the settings keys (the
// first outermost).
func keyErrorf(keys []string, format string, args ...any) error {
	err := fmt.Errorf("proxy: "+format, args...)
	for _, k := range slices.Backward(keys) {
		err = &KeyError{Key: k, Err: err}
	}
	return err
}

// keys is keyErrorf's list of keys, for readability at the call sites.
func keys(k ...string) []string { return k }
