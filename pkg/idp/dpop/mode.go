package dpop

import "fmt"

// Mode is how a route treats DPoP. The zero Mode is Off.
type Mode uint8

const (
	// Off: the route does not ask for proofs. A DPoP-bound token is still
	// refused unless its proof verifies (a binding is never ignored).
	Off Mode = iota
	// Allowed: bearer tokens pass as before; a DPoP-bound token passes
	// only under the DPoP scheme with a valid proof.
	Allowed
	// Required: only DPoP-bound tokens with a valid proof pass.
	Required
)

var modeNames = [...]string{Off: "off", Allowed: "allowed", Required: "required"}

// ParseMode parses "off", "allowed" or "required" (exactly, lower case).
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return Off, fmt.Errorf("dpop: unknown mode %q: want off, allowed or required", s)
}

// String returns the name ParseMode reads.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// MarshalText and UnmarshalText let a Mode be read from and written to
// configuration files (YAML, JSON) by name.
func (m Mode) MarshalText() ([]byte, error) {
	if int(m) >= len(modeNames) {
		return nil, fmt.Errorf("dpop: invalid mode %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText parses text as ParseMode does.
func (m *Mode) UnmarshalText(text []byte) error {
	v, err := ParseMode(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
