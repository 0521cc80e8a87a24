package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

var (
	routeClaimsType  = reflect.TypeFor[map[string][]any]()  // routes[].claims
	headerClaimsType = reflect.TypeFor[map[string]string]() // headers.claims
)

// checkRouteClaims checks routes[i].claims, the mapping node n: each key a
// claim path, each value a non-empty list of strings, booleans and JSON
// numbers.
func checkRouteClaims(path string, n *yaml.Node, key string, errs *[]error) {
	at := func(node *yaml.Node, format string, args ...any) {
		*errs = append(*errs, fmt.Errorf("proxy: config %s:%d:%d: %s", path, node.Line, node.Column, fmt.Sprintf(format, args...)))
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		at(n, "%s must map claim paths to lists of accepted values, e.g. {tid: [\"<tenant ID>\"]}", key)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := key + "." + kn.Value
		if _, err := idp.ParseClaimPath(kn.Value); err != nil {
			at(kn, "%s: %s", key, claimPathProblem(err))
			continue
		}
		if vn.Kind == yaml.AliasNode {
			vn = vn.Alias
		}
		if vn.Kind != yaml.SequenceNode {
			at(vn, "%s must be a list of accepted values, e.g. [%s]", k, hintValue(vn))
			continue
		}
		if len(vn.Content) == 0 {
			at(vn, "%s has no accepted values: it could never match", k)
			continue
		}
		for _, e := range vn.Content {
			if e.Kind == yaml.AliasNode {
				e = e.Alias
			}
			if err := checkClaimValue(e); err != nil {
				at(e, "%s: %v", k, err)
			}
		}
	}
}

// checkClaimValue checks one accepted value of a claims rule.
func checkClaimValue(e *yaml.Node) error {
	if e.Kind != yaml.ScalarNode {
		return errors.New("a value is a string, a boolean or a number, not a list or a mapping (an array claim matches when one of its elements does)")
	}
	switch e.Tag {
	case "!!null":
		return errors.New("null is not a value a rule can accept: write a string, a boolean or a number")
	case "!!str":
		if e.Value == "" {
			return errors.New("empty string: it could never be meant")
		}
		return nil
	case "!!bool":
		return nil
	case "!!int", "!!float":
		if _, err := idp.CanonicalNumber(e.Value); err != nil {
			return fmt.Errorf("number %s: write it as JSON does (1, -2, 1.5, 1e9), or quote it to mean a string", e.Value)
		}
		return nil
	}
	return fmt.Errorf("%q reads as YAML %s: quote it to mean a string", e.Value, strings.TrimPrefix(e.Tag, "!!"))
}

// hintValue suggests the list form of a single value.
func hintValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 || n.Tag == "!!str" {
			return fmt.Sprintf("%q", n.Value)
		}
		return n.Value
	}
	return `"value"`
}

// claimPathProblem words a claim path error with the hint the claim
// mapping's errors give.
func claimPathProblem(err error) string {
	var pe *idp.ClaimPathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("claim path %q: %s (at byte %d); names with '.' are written [\"a.b\"], see README, Claim mapping", pe.Text, pe.Reason, pe.Offset)
	}
	return err.Error()
}

// checkEmailDomains checks routes[i].email_domains, a list of domains.
func checkEmailDomains(path string, n *yaml.Node, key string, errs *[]error) {
	if n.Kind != yaml.SequenceNode {
		return // the list check reports it
	}
	for _, e := range n.Content {
		if e.Kind == yaml.AliasNode {
			e = e.Alias
		}
		if e.Kind != yaml.ScalarNode {
			continue
		}
		if _, err := idp.NewEmailDomainsGuard(e.Value); err != nil {
			*errs = append(*errs, fmt.Errorf("proxy: config %s:%d:%d: %s: %s", path, e.Line, e.Column, key, strings.TrimPrefix(err.Error(), "idp: ")))
		}
	}
}

// checkHeaderClaims checks headers.claims, the mapping node n: header
// names to claim paths.
func checkHeaderClaims(path string, n *yaml.Node, key string, errs *[]error) {
	at := func(node *yaml.Node, format string, args ...any) {
		*errs = append(*errs, fmt.Errorf("proxy: config %s:%d:%d: %s", path, node.Line, node.Column, fmt.Sprintf(format, args...)))
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		at(n, "%s must map header names to claim paths, e.g. {X-Auth-Request-Tenant: tid}", key)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if vn.Kind == yaml.AliasNode {
			vn = vn.Alias
		}
		if vn.Kind != yaml.ScalarNode || vn.Tag == "!!null" {
			at(vn, "%s.%s must be one claim path, e.g. groups", key, kn.Value)
			continue
		}
		if err := proxy.CheckClaimHeader(kn.Value, vn.Value); err != nil {
			node := kn // the header name is wrong, or else the claim path
			if !errors.Is(err, proxy.ErrHeaderName) {
				node = vn
			}
			at(node, "%s: %v", key, err)
		}
	}
}

// exactClaimValues gives the numbers of the routes' claims rules their
// exact value: the YAML decoder reads them as int or float64, which holds
// neither 9007199254740993 nor 0.1 exactly; the text as written is a JSON
// number (checkClaimValue), so it is kept as one.
func exactClaimValues(doc *yaml.Node, routes []proxy.RouteConfig) {
	if doc == nil || len(doc.Content) == 0 {
		return
	}
	seq := mappingValue(doc.Content[0], "routes")
	if seq == nil || seq.Kind != yaml.SequenceNode || len(seq.Content) != len(routes) {
		return
	}
	for i, item := range seq.Content {
		claims := mappingValue(item, "claims")
		if claims == nil || claims.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(claims.Content); j += 2 {
			vals := routes[i].Claims[claims.Content[j].Value]
			list := claims.Content[j+1]
			if list.Kind == yaml.AliasNode {
				list = list.Alias
			}
			if list.Kind != yaml.SequenceNode || len(list.Content) != len(vals) {
				continue
			}
			for k, e := range list.Content {
				if e.Kind == yaml.AliasNode {
					e = e.Alias
				}
				if e.Kind == yaml.ScalarNode && (e.Tag == "!!int" || e.Tag == "!!float") {
					if _, err := idp.CanonicalNumber(e.Value); err == nil {
						vals[k] = json.Number(e.Value)
					}
				}
			}
		}
	}
}

// headerClaimsAsWritten returns headers.claims with its header names as
// the file writes them (viper lower-cases map keys), nil when absent.
func headerClaimsAsWritten(doc *yaml.Node) map[string]string {
	if doc == nil || len(doc.Content) == 0 {
		return nil
	}
	n := mappingValue(mappingValue(doc.Content[0], "headers"), "claims")
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := n.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		out[n.Content[i].Value] = v.Value
	}
	return out
}

// mappingValue returns the value node of key in the mapping n, nil when n
// is not a mapping or lacks the key.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}
