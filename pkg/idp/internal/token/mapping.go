package token

import (
	"bytes"
	"errors"
	"strings"
)

// Mapping says where DecodeMapped reads the identity: each field lists
// the claim paths tried in order, the first present (not absent, not
// null) one giving the value; a field without paths keeps DecodeClaims'
// lenient reading of Keycloak's claim (preferred_username, email,
// realm_access.roles, groups, scope else scp). Mapped claims are strict:
// a value of the wrong type, or a name twice in an object on the way,
// makes the token invalid. Build it with NewMapping.
type Mapping struct {
	Username, Email       []Path // a string; for Username an empty string counts as absent
	Roles, Groups, Scopes []Path // an array of strings, or keys(...) of an object; Scopes also a space-separated string
	tops                  map[string]int
	topNames              []string
	username, email       []mappedPath
	roles, groups, scopes []mappedPath
}

type mappedPath struct {
	Path
	top int // index of Names[0] in the values captured by DecodeMapped
}

// Mapped is the identity a Mapping reads.
type Mapped struct {
	Username, Email       string
	Roles, Groups, Scopes []string
}

// NewMapping compiles the paths of each field. A keys(...) path for
// Username or Email is refused (it names a list).
func NewMapping(m Mapping) (*Mapping, error) {
	out := &Mapping{Username: m.Username, Email: m.Email, Roles: m.Roles, Groups: m.Groups, Scopes: m.Scopes, tops: map[string]int{}}
	compile := func(field string, paths []Path, list bool) ([]mappedPath, error) {
		var mp []mappedPath
		for _, p := range paths {
			if p.Keys && !list {
				return nil, &PathError{Text: p.Text, Reason: field + " is one string: keys(...) names a list"}
			}
			top, ok := out.tops[p.Names[0]]
			if !ok {
				top = len(out.topNames)
				out.tops[p.Names[0]] = top
				out.topNames = append(out.topNames, p.Names[0])
			}
			mp = append(mp, mappedPath{Path: p, top: top})
		}
		return mp, nil
	}
	var err error
	if out.username, err = compile("username", m.Username, false); err != nil {
		return nil, err
	}
	if out.email, err = compile("email", m.Email, false); err != nil {
		return nil, err
	}
	out.roles, _ = compile("roles", m.Roles, true)
	out.groups, _ = compile("groups", m.Groups, true)
	out.scopes, _ = compile("scopes", m.Scopes, true)
	return out, nil
}

// DecodeMapped is DecodeClaims that also reads the identity m maps into
// Claims.Mapped, in the same pass over the payload.
func DecodeMapped(in *Interner, payload []byte, m *Mapping) (*Claims, error) {
	return decode(in, payload, m)
}

// capture keeps the value of a top-level member a path of m starts at.
func (m *Mapping) capture(vals [][]byte, name string, v []byte) error {
	if i, ok := m.tops[name]; ok {
		vals[i] = v // once: EachMember refuses a name twice
	}
	return nil
}

// resolve reads the mapped identity from the captured top-level values.
func (m *Mapping) resolve(in *Interner, vals [][]byte, c *Claims) (*Mapped, error) {
	out := &Mapped{Username: c.PreferredUsername, Email: c.Email, Roles: c.RealmRoles, Groups: c.Groups, Scopes: c.Scopes()}
	var err error
	if out.Username, err = m.str(vals, m.username, out.Username); err != nil {
		return nil, err
	}
	if out.Email, err = m.str(vals, m.email, out.Email); err != nil {
		return nil, err
	}
	if out.Roles, err = m.list(in, vals, m.roles, false, out.Roles); err != nil {
		return nil, err
	}
	if out.Groups, err = m.list(in, vals, m.groups, false, out.Groups); err != nil {
		return nil, err
	}
	if out.Scopes, err = m.list(in, vals, m.scopes, true, out.Scopes); err != nil {
		return nil, err
	}
	return out, nil
}

// str returns the first present, non-empty string of paths; def
// without paths.
func (m *Mapping) str(vals [][]byte, paths []mappedPath, def string) (string, error) {
	if len(paths) == 0 {
		return def, nil
	}
	for _, p := range paths {
		v, err := lookup(vals[p.top], p.Path)
		if err != nil || v == nil {
			if err != nil {
				return "", err
			}
			continue
		}
		s, ok := String(nil, v)
		if !ok {
			return "", Invalid("claim "+p.Text+" must be a string", nil)
		}
		if s != "" {
			return s, nil
		}
	}
	return "", nil
}

// list returns the strings of the first present path of paths: an array
// of strings, the keys of an object for keys(...), and with spaced a
// space-separated string.
func (m *Mapping) list(in *Interner, vals [][]byte, paths []mappedPath, spaced bool, def []string) ([]string, error) {
	if len(paths) == 0 {
		return def, nil
	}
	for _, p := range paths {
		v, err := lookup(vals[p.top], p.Path)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		if p.Keys {
			return objectKeys(in, v, p.Text)
		}
		if out, ok := jsonStrings(in, v); ok {
			return out, nil
		}
		if spaced {
			if s, ok := String(in, v); ok {
				return strings.Fields(s), nil
			}
			return nil, Invalid("claim "+p.Text+" must be a string or an array of strings", nil)
		}
		return nil, Invalid("claim "+p.Text+" must be an array of strings", nil)
	}
	return nil, nil
}

// lookup follows p below its top-level value v; nil when a member on the
// way is absent or null.
func lookup(v []byte, p Path) ([]byte, error) {
	for _, name := range p.Names[1:] {
		if v == nil || string(v) == "null" {
			return nil, nil
		}
		if v[0] != '{' {
			return nil, Invalid("claim "+p.Text+": not an object on the way", nil)
		}
		found, err := findMember(v, name)
		var de *DuplicateError
		if errors.Is(err, errTwice) || errors.As(err, &de) {
			return nil, Invalid("claim "+p.Text+": a name twice", nil)
		}
		if err != nil {
			return nil, err
		}
		v = found
	}
	if v == nil || string(v) == "null" {
		return nil, nil
	}
	return v, nil
}

// objectKeys returns the member names of the object v, refusing a name
// given twice.
func objectKeys(in *Interner, v []byte, text string) ([]string, error) {
	if v[0] != '{' {
		return nil, Invalid("claim "+text+" must be an object", nil)
	}
	out := []string{}
	err := EachMember(in, v, func(n string, _ []byte) error {
		out = append(out, n)
		return nil
	})
	var de *DuplicateError
	if errors.As(err, &de) {
		return nil, Invalid("claim "+text+": a name twice", nil)
	}
	return out, err
}

// mappedValues returns the slots DecodeMapped captures top-level values in.
func (m *Mapping) mappedValues() [][]byte {
	return make([][]byte, len(m.topNames))
}

// Lookup returns the raw value p names in the payload, nil when absent
// or null; for keys(...) paths, the object whose keys p names (see Keys).
// A name twice in an object on the way is an error.
func Lookup(payload []byte, p Path) ([]byte, error) {
	top := Path{Text: p.Text, Names: append([]string{""}, p.Names...)}
	v, err := lookup(bytes.TrimSpace(payload), top)
	if errors.Is(err, errJSON) {
		return nil, Invalid("malformed token", err)
	}
	return v, err
}

// Keys returns the member names of the object v (a value Lookup returned
// for a keys(...) path), refusing a name given twice.
func Keys(v []byte, p Path) ([]string, error) { return objectKeys(nil, v, p.Text) }
