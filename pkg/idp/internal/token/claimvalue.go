package token

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// Kind is the JSON type of a claim value that rules compare.
type Kind uint8

// Kinds of claim values.
const (
	KindString Kind = iota + 1
	KindBool
	KindNumber
)

// Value is one string, boolean or number of a claim, as rules compare it:
// Text is the string itself, "true" or "false", or the number in the form
// CanonicalNumber gives. Two values are equal when Kind and Text are.
// Raw is the value's JSON text for a number (as the token wrote it), ""
// otherwise.
type Value struct {
	Kind Kind
	Text string
	Raw  string
}

// ErrNumber is the error of CanonicalNumber.
var ErrNumber = errors.New("not a JSON number")

// maxExponentDigits and maxExponent bound the exponent of a number
// CanonicalNumber accepts, as written and in the canonical form: beyond
// 10^±999999999 no claim or rule has a use, and the arithmetic stays
// within int64.
const (
	maxExponentDigits = 9
	maxExponent       = 999999999
)

var errExponent = errors.New("exponent out of range")

// CanonicalNumber returns the one spelling of the JSON number s (RFC 8259
// grammar) that every spelling of the same decimal value shares, so that
// 1, 1.0, 10e-1 and 1e0 compare equal while 9007199254740993 and
// 9007199254740992 do not: the comparison is exact, on the decimal value,
// never through float64. The form: "-" for negative values (never for
// zero), then the significant digits, as an integer when the value is
// one of at most 21 digits ("100", "-3"), as a decimal fraction when it
// needs at most five zeros after the point ("0.001", "12.5"),
// otherwise in exponent form ("1.5e+30", "1e-7"). A number whose
// exponent, as written or in that form, has more than nine digits is
// refused.
func CanonicalNumber(s string) (string, error) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	digitsAt := func() int {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - j
	}
	intStart := i
	if i < len(s) && s[i] == '0' {
		i++
	} else if digitsAt() == 0 {
		return "", ErrNumber
	}
	intPart := s[intStart:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		if digitsAt() == 0 {
			return "", ErrNumber
		}
		frac = s[j:i]
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		j := i
		if digitsAt() == 0 {
			return "", ErrNumber
		}
		e := strings.TrimLeft(s[j:i], "0")
		if len(e) > maxExponentDigits {
			return "", errExponent
		}
		if e != "" {
			n, _ := strconv.ParseInt(e, 10, 64) // at most 9 digits
			exp = n
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return "", ErrNumber
	}
	// value = digits × 10^exp, digits without leading or trailing zeros.
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	if digits == "" {
		return "0", nil
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	digits = trimmed
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	n := int64(len(digits))
	point := n + exp // digits before the decimal point
	if e := point - 1; e > maxExponent || e < -maxExponent {
		return "", errExponent
	}
	switch {
	case exp >= 0 && point <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", int(exp)))
	case exp < 0 && point > 0:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	case exp < 0 && point > -6:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", int(-point)))
		b.WriteString(digits)
	default:
		b.WriteString(digits[:1])
		if n > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		e := point - 1
		b.WriteByte('e')
		if e >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatInt(e, 10))
	}
	return b.String(), nil
}

// Scalar decodes v, one JSON value, as a rule's Value; ok is false for
// null, an object, an array, or a number CanonicalNumber refuses.
func Scalar(v []byte) (Value, bool) {
	if len(v) == 0 {
		return Value{}, false
	}
	switch c := v[0]; {
	case c == '"':
		s, ok := String(nil, v)
		return Value{Kind: KindString, Text: s}, ok
	case string(v) == "true", string(v) == "false":
		return Value{Kind: KindBool, Text: string(v)}, true
	case c == '-' || '0' <= c && c <= '9':
		t, err := CanonicalNumber(string(v))
		return Value{Kind: KindNumber, Text: t, Raw: string(v)}, err == nil
	}
	return Value{}, false
}

// Values decodes v, the raw value of a claim (as Lookup returns it), into
// the values rules compare: a string, boolean or number is one value, an
// array holds its elements. ok is false for anything else: an object, an
// array holding an object, an array or null, and a number CanonicalNumber
// refuses. A nil v (an absent claim) has no values and is ok.
func Values(v []byte) (vals []Value, ok bool) {
	if v == nil {
		return nil, true
	}
	if v[0] != '[' {
		val, ok := Scalar(v)
		if !ok {
			return nil, false
		}
		return []Value{val}, true
	}
	i := skipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return []Value{}, true
	}
	for i < len(v) {
		end, err := scanValue(v, i, maxJSONDepth-1, false)
		if err != nil {
			return nil, false
		}
		val, ok := Scalar(v[i:end])
		if !ok {
			return nil, false
		}
		vals = append(vals, val)
		i = skipSpace(v, end)
		if i >= len(v) {
			return nil, false
		}
		if v[i] == ']' {
			return vals, true
		}
		if v[i] != ',' {
			return nil, false
		}
		i = skipSpace(v, i+1)
	}
	return nil, false
}

// Match reports whether the claim's raw value v (as Lookup returns it)
// holds one of wants: v itself, or an element of the array v, equal to a
// want in Kind and Text. It reads v as Values does (an object, or an
// array holding anything but strings, booleans and numbers, never
// matches) without allocating for strings without escapes and booleans.
func Match(v []byte, wants []Value) bool {
	if len(v) == 0 {
		return false
	}
	if v[0] != '[' {
		return matchScalar(v, wants) == 1
	}
	found := false
	i := skipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return false
	}
	for i < len(v) {
		end, err := scanValue(v, i, maxJSONDepth-1, false)
		if err != nil {
			return false
		}
		switch matchScalar(v[i:end], wants) {
		case -1:
			return false // not a claim rules read
		case 1:
			found = true
		}
		i = skipSpace(v, end)
		if i >= len(v) {
			return false
		}
		if v[i] == ']' {
			return found
		}
		if v[i] != ',' {
			return false
		}
		i = skipSpace(v, i+1)
	}
	return false
}

// matchScalar is 1 when the JSON value v equals one of wants, 0 when it
// does not, -1 when v is not a string, boolean or number Scalar reads.
func matchScalar(v []byte, wants []Value) int {
	switch c := v[0]; {
	case c == '"':
		s := v[1 : len(v)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			val, ok := Scalar(v)
			if !ok {
				return -1
			}
			return matchValue(val, wants)
		}
		for _, w := range wants {
			if w.Kind == KindString && w.Text == string(s) {
				return 1
			}
		}
		return 0
	case c == 't' || c == 'f':
		val, ok := Scalar(v)
		if !ok {
			return -1
		}
		return matchValue(val, wants)
	case c == '-' || '0' <= c && c <= '9':
		hasNumber := false
		for _, w := range wants {
			hasNumber = hasNumber || w.Kind == KindNumber
		}
		if !hasNumber {
			if _, err := CanonicalNumber(string(v)); err != nil {
				return -1
			}
			return 0
		}
		val, ok := Scalar(v)
		if !ok {
			return -1
		}
		return matchValue(val, wants)
	}
	return -1
}

func matchValue(val Value, wants []Value) int {
	for _, w := range wants {
		if w.Kind == val.Kind && w.Text == val.Text {
			return 1
		}
	}
	return 0
}
