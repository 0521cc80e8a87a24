package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/internal/suggest"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// parseDocument parses the YAML file once and checks the tree before it is
// decoded: every key is known (an unknown one is reported with its line and
// the closest known key) and every scalar has its key's type, so that a
// mistake is reported where it was made rather than as a decoder's message.
func parseDocument(path string, raw []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("proxy: config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil // empty file
	}
	var errs []error
	checkMapping(path, doc.Content[0], reflect.TypeFor[File](), "", &errs)
	return &doc, errors.Join(errs...)
}

// checkMapping checks the mapping node n against the struct type t, whose
// fields are named by their mapstructure tags; prefix is the dotted key of
// n.
func checkMapping(path string, n *yaml.Node, t reflect.Type, prefix string, errs *[]error) {
	at := func(node *yaml.Node, format string, args ...any) {
		*errs = append(*errs, fmt.Errorf("proxy: config %s:%d:%d: %s", path, node.Line, node.Column, fmt.Sprintf(format, args...)))
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		if !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
			at(n, "%s must be a mapping of keys", displayKey(prefix))
		}
		return
	}
	fields := map[string]reflect.StructField{}
	names := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = f
		names = append(names, tag)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := prefix + kn.Value
		f, ok := fields[kn.Value]
		if !ok {
			msg := fmt.Sprintf("unknown key %q", key)
			if s := suggest.Closest(kn.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", prefix+s)
			} else if prefix == "" {
				msg += " (known: " + strings.Join(names, ", ") + ")"
			}
			at(kn, "%s", msg)
			continue
		}
		checkValue(path, vn, f.Type, key, errs)
	}
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	routeType     = reflect.TypeFor[proxy.RouteConfig]()
	stringMapType = reflect.TypeFor[map[string][]string]()
	issuersType   = reflect.TypeFor[[]Issuer]()
)

// checkValue checks the value node n of the dotted key against type t.
func checkValue(path string, n *yaml.Node, t reflect.Type, key string, errs *[]error) {
	at := func(format string, args ...any) {
		*errs = append(*errs, fmt.Errorf("proxy: config %s:%d:%d: %s", path, n.Line, n.Column, fmt.Sprintf(format, args...)))
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	null := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch {
	case t == durationType || t.Kind() == reflect.Bool || t.Kind() == reflect.Int || t.Kind() == reflect.Int64 || t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			at("%s must be a single value", key)
			return
		}
		if null {
			return
		}
		if err := checkScalar(t, n.Value); err != nil {
			at("%s: %v", key, err)
		}
	case t.Kind() == reflect.Struct:
		checkMapping(path, n, t, key+".", errs)
	case t.Kind() == reflect.Slice && t.Elem() == routeType:
		if null {
			return
		}
		if n.Kind != yaml.SequenceNode {
			at("%s must be a list of rules", key)
			return
		}
		for i, item := range n.Content {
			checkMapping(path, item, routeType, fmt.Sprintf("%s[%d].", key, i), errs)
		}
	case t == routeClaimsType:
		checkRouteClaims(path, n, key, errs)
	case t == headerClaimsType:
		checkHeaderClaims(path, n, key, errs)
	case t == issuersType:
		if null {
			return
		}
		if n.Kind != yaml.SequenceNode {
			at("%s must be a list", key)
			return
		}
		for i, item := range n.Content {
			checkMapping(path, item, t.Elem(), fmt.Sprintf("%s[%d].", key, i), errs)
		}
	case t == stringMapType:
		if !null && n.Kind != yaml.MappingNode {
			at("%s must map client IDs to lists of roles", key)
		}
	case t.Kind() == reflect.Slice:
		// A list, or one comma-separated string (as from the environment).
		if !null && n.Kind != yaml.SequenceNode && n.Kind != yaml.ScalarNode {
			at("%s must be a list", key)
		}
		if strings.HasPrefix(key, "routes[") && strings.HasSuffix(key, ".email_domains") {
			checkEmailDomains(path, n, key, errs)
		}
	}
}

// checkScalar reports whether s can be decoded as a value of type t, in a
// sentence for the operator.
func checkScalar(t reflect.Type, s string) error {
	switch {
	case t == durationType:
		if _, err := durationHook(nil, durationType, s); err != nil {
			return err
		}
	case t.Kind() == reflect.Bool:
		if _, err := strconv.ParseBool(s); err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
	}
	return nil
}

// fieldType returns the type of the field at the dotted key of File.
func fieldType(key string) (reflect.Type, bool) {
	t := reflect.TypeFor[File]()
	for _, part := range strings.Split(key, ".") {
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		found := false
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("mapstructure") == part {
				t = t.Field(i).Type
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return t, true
}

func displayKey(k string) string {
	if k == "" {
		return "the document"
	}
	return strings.TrimSuffix(k, ".")
}
