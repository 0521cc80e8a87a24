package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// keyFlags are the command-line flags that set a key (idp-proxy's
// persistent flags; the cli package's tests check that they exist).
var keyFlags = map[string]string{
	"listen":         "--listen",
	"upstream.url":   "--upstream",
	"metrics_listen": "--metrics-listen",
}

// KeyFlag returns the flag that sets key, or "".
func KeyFlag(key string) string { return keyFlags[key] }

// sessionFieldKeys are the session section's keys of idp.ConfigError
// fields that idp-proxy spells differently.
var sessionFieldKeys = map[string]string{
	"session.previous_secrets": "session.previous_secrets_file",
}

// idpFieldKey returns idp-proxy's key of an idp.ConfigError's field:
// "session." fields are the session section's, the others the idp
// section's; "" when idp-proxy has no such key.
func idpFieldKey(field string, known []string) string {
	key := "idp." + field
	if strings.HasPrefix(field, "session.") {
		key = field
		if k, ok := sessionFieldKeys[field]; ok {
			key = k
		}
	}
	if field == "" || !slices.Contains(known, key) {
		return ""
	}
	return key
}

// explain rewrites the problems Compile found so that each names where
// it is set: idp.Config's problems (*idp.ConfigError) become *KeyError
// values under their key ("idp.realm: realm is required"), and a missing
// required key says in which file and with which environment variable
// (or flag) to set it. Without a file, a first line says that none was
// given.
func (f File) explain(errs []error) []error {
	var flat []error
	for _, e := range errs {
		flat = append(flat, flatten(e)...)
	}
	known := knownKeys()
	missing := false
	for i, e := range flat {
		var ke *KeyError
		if errors.As(e, &ke) {
			if ke.Missing {
				flat[i] = f.whereToSet(ke)
				missing = true
			}
			continue
		}
		var ce *idp.ConfigError
		if !errors.As(e, &ce) {
			continue
		}
		key := idpFieldKey(ce.Field, known)
		if key == "" {
			continue
		}
		ke = &KeyError{Key: key, Missing: ce.Missing, Err: &idpProblem{msg: "proxy: " + key + ": " + ce.Problem, err: e}}
		if ke.Missing {
			flat[i] = f.whereToSet(ke)
			missing = true
		} else {
			flat[i] = ke
		}
	}
	if missing && f.noFile {
		flat = append([]error{fmt.Errorf("proxy: no configuration file was given (--config FILE, or %s; config.example.yaml documents every key): only the defaults, the environment and the flags were read", EnvConfigFile)}, flat...)
	}
	return flat
}

// whereToSet adds to a "... is required" problem where to set its key:
// the file (or that there is none), the environment variable, the flag.
func (f File) whereToSet(ke *KeyError) *KeyError {
	var ways, with []string
	if f.source != "" {
		ways = append(ways, "in "+f.source)
	}
	known := knownKeys()
	for _, k := range append([]string{ke.Key}, ke.Also...) {
		if flag := KeyFlag(k); flag != "" {
			with = append(with, flag)
		}
		if slices.Contains(known, k) && !strings.HasSuffix(k, ".enabled") {
			with = append(with, EnvName(k))
		}
	}
	if len(with) > 0 {
		ways = append(ways, "with "+strings.Join(with, " or "))
	}
	return &KeyError{Key: ke.Key, Also: ke.Also, Missing: true, Err: &idpProblem{
		msg: ke.Err.Error() + ": set it " + strings.Join(ways, ", or "),
		err: ke.Err,
	}}
}

// idpProblem is a problem's message, rewritten, over the original error
// (errors.Is(err, idp.ErrConfig) still holds).
type idpProblem struct {
	msg string
	err error
}

func (p *idpProblem) Error() string { return p.msg }
func (p *idpProblem) Unwrap() error { return p.err }

// flatten returns the leaves of a tree of errors.Join values.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
