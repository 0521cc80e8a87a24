package config

import (
	"reflect"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"
)

// KeyError is a problem of one setting, named by its dotted key in the
// file ("upstream.url", "routes[2].cors.max_age"), so that a program can
// say where the value came from (errors.As) without reading the message.
// The libraries' problems (*proxy.FieldError, *idp.ConfigError), which
// name Go fields, become KeyError values under the keys those fields are
// read from (see fileKey). Its message is Err's, which names the key.
type KeyError struct {
	Key string
	// Also are the other settings the problem concerns, if any.
	Also []string
	// Missing reports that the setting is required and not set.
	Missing bool
	Err     error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// fileKey returns the file's key of a Go field path of pkg/proxy (from
// proxy.Config, whose fields File holds under the same names, and the
// idp.Config under IDP) or of pkg/idp (from idp.Config, whose fields the
// idp section holds, but for Session and Pages, sections of their own):
// the mapstructure tags along the path, found by reflection over File,
// then over its IDP section. A slice index stays an index
// ("Routes[2].Methods" is "routes[2].methods"), a map key becomes an
// element ("Headers.Claims[X-Tenant]" is "headers.claims.X-Tenant"); a
// field the file gives as a file of its own (PreviousSecrets,
// previous_secrets_file) is found by the name with "File". "" when the
// file has no such key. New fields of the libraries need nothing here:
// their tags say their keys.
func fileKey(path string) string {
	if k := keyIn(reflect.TypeFor[File](), path); k != "" {
		return k
	}
	if k := keyIn(reflect.TypeFor[IDP](), path); k != "" {
		return "idp." + k
	}
	return ""
}

// keyIn is fileKey under the struct type t.
func keyIn(t reflect.Type, path string) string {
	var out []string
	for _, elem := range fielderr.Elements(path) {
		name, index, indexed := fielderr.SplitIndex(elem)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := t.FieldByName(name)
		if !ok {
			f, ok = t.FieldByName(name + "File")
		}
		if !ok {
			return ""
		}
		tag, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if tag == "" || tag == "-" {
			return ""
		}
		key := tag
		t = f.Type
		if indexed {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				key += "[" + index + "]"
			case reflect.Map:
				key += "." + index
			default:
				return ""
			}
			t = t.Elem()
		}
		out = append(out, key)
	}
	return strings.Join(out, ".")
}

// fileKeys is fileKey of each path, those with a key.
func fileKeys(paths []string) []string {
	var out []string
	for _, p := range paths {
		if k := fileKey(p); k != "" {
			out = append(out, k)
		}
	}
	return out
}
