package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Redacted replaces a secret's value in Effective.
const Redacted = "(redacted)"

// secretKeys are redacted by Effective when set.
var secretKeys = map[string]bool{"idp.client_secret": true, "idp.session_secret": true}

// Effective returns the configuration as the file's keys (nested maps,
// routes as a list) with every default applied and secrets redacted:
// what check-config --effective prints, for operators and deploy checks.
// Durations are Go duration strings.
func (f File) Effective() map[string]any {
	f = f.withDefaults()
	// An app's zero transport settings are the upstream section's, and
	// the identity headers it does not set are the headers section's.
	f.Upstreams = slices.Clone(f.Upstreams)
	for i := range f.Upstreams {
		f.Upstreams[i].UpstreamConfig = f.Upstreams[i].Inherit(f.Upstream)
		f.Upstreams[i].Headers = f.Upstreams[i].Headers.Inherit(f.Headers)
	}
	m, _ := effective(reflect.ValueOf(f), "").(map[string]any)
	return m
}

func effective(v reflect.Value, key string) any {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		out := make(map[string]any, v.NumField())
		t := v.Type()
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("mapstructure")
			if tag == "" || tag == "-" {
				continue
			}
			if strings.Contains(tag, ",squash") {
				// An embedded section whose keys are the parent's
				// (upstreams[].url, upstreams[].timeout, ...).
				if inner, ok := effective(v.Field(i), key).(map[string]any); ok {
					maps.Copy(out, inner)
				}
				continue
			}
			k := tag
			if key != "" {
				k = key + "." + tag
			}
			out[tag] = effective(v.Field(i), k)
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return effective(v.Elem(), key)
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = effective(v.Index(i), key)
		}
		return out
	case reflect.Map:
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out[iter.Key().String()] = effective(iter.Value(), key)
		}
		return out
	case reflect.String:
		if secretKeys[key] && v.String() != "" {
			return Redacted
		}
		return v.String()
	}
	return v.Interface()
}
