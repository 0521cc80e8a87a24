package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
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

// explain rewrites the problems Compile found so that each names where
// it is set: the libraries' problems, which name Go fields
// (*proxy.FieldError, *idp.ConfigError), become *KeyError values under
// the file's keys (fileKey), worded with them: pkg/proxy's as
// "proxy: " and the reason ("proxy: routes[0] \"/api/\": cors:
// allowed_origins ..."), pkg/idp's as "proxy: ", the key and the reason
// ("proxy: idp.realm: realm is required"); and a missing
// required key says in which file and with which environment variable
// (or flag) to set it. Without a file, a first line says that none was
// given.
func (f File) explain(errs []error) []error {
	var flat []error
	for _, e := range errs {
		flat = append(flat, flatten(e)...)
	}
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
		ke = libraryProblem(e)
		if ke == nil {
			continue
		}
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

// libraryProblem returns a problem of pkg/proxy or pkg/idp (a
// *proxy.FieldError, which *idp.ConfigError is too) as a *KeyError of the
// file's key, worded with the file's keys; nil for another error, or one
// of a field the file has no key for.
func libraryProblem(e error) *KeyError {
	fe, ok := e.(*proxy.FieldError)
	if !ok && errors.Is(e, idp.ErrConfig) {
		ok = errors.As(e, &fe) // pkg/idp's, possibly wrapped
	}
	if !ok {
		return nil
	}
	key := fileKey(fe.Field)
	if key == "" {
		return nil
	}
	msg := "proxy: " + fe.ReasonNaming(fileKey)
	if errors.Is(e, idp.ErrConfig) {
		msg = "proxy: " + key + ": " + fe.ReasonNaming(fileKey)
	}
	return &KeyError{Key: key, Also: fileKeys(fe.Also), Missing: fe.Missing, Err: &idpProblem{msg: msg, err: e}}
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
