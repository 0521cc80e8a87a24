package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/internal/suggest"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// EnvPrefix starts the name of every environment override:
// IDP_PROXY_<SECTION>_<KEY>, e.g. IDP_PROXY_IDP_CLIENT_SECRET or
// IDP_PROXY_UPSTREAM_URL. List values are comma-separated. Routes cannot
// be set from the environment.
const EnvPrefix = "IDP_PROXY_"

// EnvConfigFile names the environment variable that may give the config
// file's path to cmd/idp-proxy; Load ignores it.
const EnvConfigFile = EnvPrefix + "CONFIG"

// LoadOptions are the layers Load puts over the file.
type LoadOptions struct {
	// Env is the environment as os.Environ returns it; only IDP_PROXY_*
	// entries are read, and an unknown IDP_PROXY_ name is an error.
	Env []string
	// Overrides set keys by their dotted name ("listen", "upstream.url"),
	// above the environment: the command line's flags.
	Overrides map[string]any
}

// Load reads the YAML file at path ("" for none: defaults, environment and
// overrides only), applies the environment and the overrides, and decodes
// the result strictly: unknown keys are errors. Precedence, highest first:
// overrides, environment, file, Default. Durations are Go durations
// ("90s", "1h") or plain numbers of seconds. Load checks types only;
// Compile checks the rest.
func Load(path string, o LoadOptions) (File, error) {
	// viper layers defaults, file, environment and overrides by dotted key
	// and decodes the result strictly (mapstructure, ErrorUnused).
	v := viper.New()
	keys := knownKeys()
	def := Default()
	for _, k := range keys {
		if val, ok := lookup(reflect.ValueOf(def), k); ok {
			v.SetDefault(k, val)
		}
	}
	var doc *yaml.Node // the file, parsed once
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return File{}, fmt.Errorf("proxy: config: %w", err)
		}
		if doc, err = parseDocument(path, b); err != nil {
			return File{}, err
		}
		// Not viper's ReadConfig: the YAML is parsed here, once, for the
		// checks' line numbers and for the routes' client IDs (viper folds
		// their case); viper gets the parsed tree, to layer over.
		var m map[string]any
		if err := doc.Decode(&m); err != nil {
			return File{}, fmt.Errorf("proxy: config %s: %w", path, err)
		}
		if h, ok := m["headers"].(map[string]any); ok {
			// headers.claims is taken from the document as written below:
			// viper would lower-case its header names and split those
			// holding a dot into nested keys.
			delete(h, "claims")
		}
		if err := v.MergeConfigMap(m); err != nil {
			return File{}, fmt.Errorf("proxy: config %s: %w", path, err)
		}
	}
	// Not viper's AutomaticEnv: it cannot reject an unknown IDP_PROXY_
	// variable nor say which variable a bad value came from; the
	// variables are matched to keys here and set as viper layers.
	envNames := make(map[string]string, len(keys))
	for _, k := range keys {
		envNames[EnvName(k)] = k
	}
	var errs []error
	fromEnv := map[string]string{}
	for _, kv := range o.Env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || name == EnvConfigFile {
			continue
		}
		k, known := envNames[name]
		if !known {
			msg := fmt.Sprintf("proxy: environment: unknown variable %s (routes cannot be set from the environment)", name)
			if s := suggest.Closest(strings.TrimPrefix(name, EnvPrefix), envSuffixes(keys)); s != "" {
				msg = fmt.Sprintf("proxy: environment: unknown variable %s (did you mean %s%s?)", name, EnvPrefix, strings.ToUpper(s))
			}
			errs = append(errs, errors.New(msg))
			continue
		}
		if t, ok := fieldType(k); ok && t.Kind() == reflect.Map {
			errs = append(errs, fmt.Errorf("proxy: environment variable %s: %s is a mapping, which cannot be set from the environment: set it in the file", name, k))
			continue
		} else if ok && t.Kind() != reflect.Slice {
			if err := checkScalar(t, val); err != nil {
				errs = append(errs, fmt.Errorf("proxy: environment variable %s (%s): %w", name, k, err))
				continue
			}
		}
		v.Set(k, val)
		fromEnv[k] = name
	}
	if len(errs) > 0 {
		return File{}, errors.Join(errs...)
	}
	for k, val := range o.Overrides {
		v.Set(k, val)
		delete(fromEnv, k)
	}
	var c File
	err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			durationHook,
			mapstructure.StringToSliceHookFunc(","),
		)
	})
	if err != nil {
		return File{}, fmt.Errorf("proxy: config %s: %w", displayPath(path), err)
	}
	if doc != nil && len(c.Routes) > 0 {
		// viper lower-cases every map key, the client IDs of client_roles
		// included; client IDs are case-sensitive, so the routes are
		// decoded from the parsed document as written.
		var routes struct {
			Routes []proxy.RouteConfig `yaml:"routes"`
		}
		if seq := mappingValue(doc.Content[0], "routes"); seq != nil && seq.Kind == yaml.SequenceNode {
			if err := routesWithoutCORS(seq).Decode(&routes.Routes); err != nil {
				return File{}, fmt.Errorf("proxy: config %s: routes: %w", path, err)
			}
		}
		if len(routes.Routes) == len(c.Routes) {
			for i := range routes.Routes {
				// The CORS policies as decoded above (they hold no map
				// keys): their max_age is a duration or a number of
				// seconds (durationHook), which the YAML decoder refuses.
				routes.Routes[i].CORS = c.Routes[i].CORS
			}
			c.Routes = routes.Routes
			exactClaimValues(doc, c.Routes)
		}
	}
	if hc := headerClaimsAsWritten(doc); hc != nil {
		// Header names as written (see above): check-config's messages
		// and the effective configuration show them so.
		c.Headers.Claims = hc
	}
	if len(fromEnv) > 0 {
		c.fromEnv = fromEnv
	}
	c.source, c.noFile = path, path == ""
	c.doc, c.path = doc, path
	// A zero written for a setting whose zero selects the default (listen:
	// "", server.read_timeout: 0) is the default for every command, as
	// Compile checks it: serve must not listen on "" (any interface, a
	// random port) after check-config said 127.0.0.1:4180.
	return c.withDefaults(), nil
}

// blameEnvironment adds to err, for every key set by an environment
// variable that one of err's *KeyError names, a line that names the
// variable: the value to fix is in the environment, not in the file.
func (f File) blameEnvironment(err error) error {
	if err == nil || len(f.fromEnv) == 0 {
		return err
	}
	named := map[string]bool{}
	errorKeys(err, named)
	keys := make([]string, 0, len(f.fromEnv))
	for k := range f.fromEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	notes := []error{err}
	for _, k := range keys {
		if named[k] {
			notes = append(notes, fmt.Errorf("proxy: %s comes from the environment variable %s, not from the file", k, f.fromEnv[k]))
		}
	}
	return errors.Join(notes...)
}

// errorKeys adds to named the key of every *KeyError in err's tree
// (errors.As would find the first only).
func errorKeys(err error, named map[string]bool) {
	if ke, ok := err.(*KeyError); ok {
		named[ke.Key] = true
		for _, k := range ke.Also {
			named[k] = true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			errorKeys(e, named)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			errorKeys(e, named)
		}
	}
}

// envSuffixes are the environment names of keys without EnvPrefix, lower
// case, for suggestions.
func envSuffixes(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.ToLower(strings.TrimPrefix(EnvName(k), EnvPrefix))
	}
	return out
}

// EnvName returns the environment variable of a dotted key:
// "idp.client_secret" is IDP_PROXY_IDP_CLIENT_SECRET.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// durationHook decodes durations from Go duration strings or from numbers
// of seconds (the specification gives jwks_cache_ttl and http_timeout in
// seconds), never from a bare number of nanoseconds.
func durationHook(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	seconds := func(f float64) (any, error) {
		if f < 0 || f > float64(1<<62)/float64(time.Second) {
			return nil, fmt.Errorf("%v seconds is out of range", f)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	switch d := data.(type) {
	case time.Duration:
		return d, nil
	case int:
		return seconds(float64(d))
	case int64:
		return seconds(float64(d))
	case uint64:
		return seconds(float64(d))
	case float64:
		return seconds(d)
	case string:
		s := strings.TrimSpace(d)
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return seconds(f)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration (like 10s, 1m30s) or a number of seconds", d)
		}
		return v, nil
	}
	return data, nil
}

func displayPath(p string) string {
	if p == "" {
		return "(no file)"
	}
	return p
}

// knownKeys lists the dotted keys of the scalar and list settings of
// Config (not routes), from its mapstructure tags.
func knownKeys() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("mapstructure")
			if tag == "" || tag == "routes" || f.Type == issuersType {
				continue // lists of sections (idp.issuers) come from the file only
			}
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(f.Type, prefix+tag+".")
				continue
			}
			out = append(out, prefix+tag)
		}
	}
	walk(reflect.TypeFor[File](), "")
	sort.Strings(out)
	return out
}

// lookup returns the field of v at the dotted key.
func lookup(v reflect.Value, key string) (any, bool) {
	for _, part := range strings.Split(key, ".") {
		t := v.Type()
		found := false
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).Tag.Get("mapstructure") == part {
				v = v.Field(i)
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return v.Interface(), true
}

// routesWithoutCORS returns a copy of the routes sequence seq whose rules
// leave out their cors key, which Load takes from viper's decoding.
func routesWithoutCORS(seq *yaml.Node) *yaml.Node {
	out := *seq
	out.Content = make([]*yaml.Node, len(seq.Content))
	for i, item := range seq.Content {
		r := item
		if r.Kind == yaml.AliasNode {
			r = r.Alias
		}
		if r.Kind != yaml.MappingNode {
			out.Content[i] = item
			continue
		}
		m := *r
		m.Content = make([]*yaml.Node, 0, len(r.Content))
		for j := 0; j+1 < len(r.Content); j += 2 {
			if r.Content[j].Value != "cors" {
				m.Content = append(m.Content, r.Content[j], r.Content[j+1])
			}
		}
		out.Content[i] = &m
	}
	return &out
}
