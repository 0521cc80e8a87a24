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

// idpMessageKeys are the idp section's keys of idp.Config's messages
// that do not start with their key's name.
var idpMessageKeys = map[string]string{
	"a session secret":        "idp.session_secret",
	"sessions need":           "idp.include_routes",
	"session cookie domain":   "session.cookie_domain",
	"session cookie name":     "session.cookie_name",
	"session max age":         "session.max_age",
	"session refresh margin":  "session.refresh_margin",
	"unknown-kid wait":        "idp.unknown_kid_wait",
	"previous session secret": "session.previous_secrets_file",
}

// explain rewrites the problems Compile found so that each names where
// it is set: idp.Config's own messages ("realm is required") become
// *KeyError values under their key ("idp.realm is required"), and a
// missing required key says in which file and with which environment
// variable (or flag) to set it. Without a file, a first line says that
// none was given.
func (f File) explain(errs []error) []error {
	var flat []error
	for _, e := range errs {
		flat = append(flat, flatten(e)...)
	}
	idpKeys := map[string]bool{}
	for _, k := range knownKeys() {
		if rest, ok := strings.CutPrefix(k, "idp."); ok {
			idpKeys[rest] = true
		}
	}
	missing := false
	for i, e := range flat {
		if ke, ok := e.(*KeyError); ok {
			if strings.Contains(ke.Err.Error(), " is required") {
				flat[i] = f.whereToSet(ke)
				missing = true
			}
			continue
		}
		if !errors.Is(e, idp.ErrConfig) {
			continue
		}
		msg := strings.TrimPrefix(e.Error(), idp.ErrConfig.Error()+": ")
		key := ""
		if word, _, _ := strings.Cut(msg, " "); idpKeys[strings.TrimSuffix(word, ":")] {
			key = "idp." + strings.TrimSuffix(word, ":")
		}
		for prefix, k := range idpMessageKeys {
			if key == "" && strings.HasPrefix(strings.ToLower(msg), prefix) {
				key = k
			}
		}
		if key == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(msg, strings.TrimPrefix(key, "idp.")); ok && strings.HasPrefix(key, "idp.") {
			msg = key + rest
		} else {
			msg = key + ": " + msg
		}
		ke := &KeyError{Key: key, Err: &idpProblem{msg: "proxy: " + msg, err: e}}
		if strings.Contains(msg, " is required") {
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
	return &KeyError{Key: ke.Key, Also: ke.Also, Err: &idpProblem{
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
