package token

import (
	"math/big"
	"strconv"
	"testing"
)

func TestCanonicalNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"0e99", "0"}, {"-0.0e-5", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"1E+0", "1"}, {"0.1e1", "1"},
		{"100", "100"}, {"1e2", "100"}, {"-3", "-3"}, {"-3.000", "-3"},
		{"12.5", "12.5"}, {"125e-1", "12.5"}, {"0.001", "0.001"}, {"1e-3", "0.001"},
		{"0.00001", "0.00001"}, {"0.000001", "0.000001"}, {"0.0000001", "1e-7"}, {"1.5e-7", "1.5e-7"},
		{"9007199254740993", "9007199254740993"}, {"9007199254740992", "9007199254740992"},
		{"123456789012345678901", "123456789012345678901"}, {"1e20", "100000000000000000000"}, {"1e21", "1e+21"},
		{"1e22", "1e+22"}, {"1.5e30", "1.5e+30"}, {"-2.50e+300", "-2.5e+300"},
		{"1e999999999", "1e+999999999"}, {"1e-000000000000001", "0.1"},
	} {
		got, err := CanonicalNumber(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalNumber(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "-", "+1", "01", "1.", ".5", "1e", "1e+", "0x10", "1 ", " 1", "NaN", "Infinity", "1e1000000000", "--1", "1.5.2", "true"} {
		if got, err := CanonicalNumber(in); err == nil {
			t.Errorf("CanonicalNumber(%q) = %q, want an error", in, got)
		}
	}
}

func TestValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Value
		ok   bool
	}{
		{`"a"`, []Value{{KindString, "a", ""}}, true},
		{`"a\u0020b"`, []Value{{KindString, "a b", ""}}, true},
		{`true`, []Value{{KindBool, "true", ""}}, true},
		{`1.50`, []Value{{KindNumber, "1.5", "1.50"}}, true},
		{`[]`, []Value{}, true},
		{`[ "x" , 2, false ]`, []Value{{KindString, "x", ""}, {KindNumber, "2", "2"}, {KindBool, "false", ""}}, true},
		{`{"a":1}`, nil, false},
		{`["a",{"b":1}]`, nil, false},
		{`[["a"]]`, nil, false},
		{`[null]`, nil, false},
		{`null`, nil, false},
		{`[1e1000000000]`, nil, false},
		{`["a"`, nil, false},
		{`["a" "b"]`, nil, false},
	} {
		got, ok := Values([]byte(tc.in))
		if ok != tc.ok || len(got) != len(tc.want) {
			t.Errorf("Values(%s) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Values(%s)[%d] = %+v, want %+v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
	if v, ok := Values(nil); !ok || v != nil {
		t.Errorf("Values(nil) = %v, %v; want none, ok", v, ok)
	}
}

// FuzzCanonicalNumber checks CanonicalNumber against math/big: it accepts
// exactly the JSON numbers (of bounded exponent), two numbers share a
// canonical form exactly when their decimal values are equal, and the
// canonical form is a JSON number that is its own canonical form.
func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "1.0", "1e0", "10e-1", "9007199254740993", "1.5e-7", "1e21", "1e22", "-2.50e+300", "0.000001", "01", "1.", "1e999999999"} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, errA := CanonicalNumber(a)
		cb, errB := CanonicalNumber(b)
		ra, okA := exactValue(a)
		rb, okB := exactValue(b)
		if (errA == nil) != okA && !hugeExponent(a) {
			t.Fatalf("CanonicalNumber(%q) error %v, but big.Rat reads it: %v", a, errA, okA)
		}
		if errA != nil {
			return
		}
		again, err := CanonicalNumber(ca)
		if err != nil || again != ca {
			t.Fatalf("CanonicalNumber(%q) = %q, whose canonical form is %q, %v", a, ca, again, err)
		}
		if okA {
			if rc, ok := exactValue(ca); (ok || !hugeExponent(ca)) && (!ok || rc.Cmp(ra) != 0) {
				t.Fatalf("CanonicalNumber(%q) = %q changes the value", a, ca)
			}
		}
		if errB == nil && okA && okB && (ca == cb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("%q -> %q and %q -> %q: equal forms %v, equal values %v", a, ca, b, cb, ca == cb, ra.Cmp(rb) == 0)
		}
	})
}

// exactValue reads s as an exact rational when it is a JSON number of a
// small enough exponent for big.Rat to hold.
func exactValue(s string) (*big.Rat, bool) {
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return nil, false
		}
	}
	if !jsonGrammar(s) || hugeExponent(s) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// hugeExponent reports whether s has an exponent big.Rat would take long
// to expand.
func hugeExponent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			n, err := strconv.Atoi(s[i+1:])
			return err != nil || n > 4000 || n < -4000
		}
	}
	return false
}

func jsonGrammar(s string) bool {
	end, err := scanNumber([]byte(s), 0)
	return err == nil && end == len(s)
}

// FuzzFindMember checks the one-pass member look-up against EachMember:
// the same value, absence, duplicate and malformed verdicts.
func FuzzFindMember(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"\u0061":1}`, `{}`, ` { "b" : [1,{"a":2}] , "a" : "x" } `, `{"a":1,}`, `{"a" 1}`, `[1]`, `{"a":1} x`} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, b, name string) {
		got, err := findMember([]byte(b), name)
		var want []byte
		twice := false
		refErr := EachMember(nil, []byte(b), func(n string, v []byte) error {
			if n == name {
				if want != nil {
					twice = true
				}
				want = v
			}
			return nil
		})
		switch {
		case refErr != nil:
			if err == nil {
				t.Fatalf("findMember(%q, %q) = %q, EachMember: %v", b, name, got, refErr)
			}
		case twice:
			if err != errTwice {
				t.Fatalf("findMember(%q, %q) = %q, %v; want errTwice", b, name, got, err)
			}
		case err != nil || string(got) != string(want) || (got == nil) != (want == nil):
			t.Fatalf("findMember(%q, %q) = %q, %v; want %q", b, name, got, err, want)
		}
	})
}

// FuzzMatch checks Match against Values: a claim matches a wanted value
// exactly when Values reads it and one of its values equals the want.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{`"a"`, `["a","b"]`, `[1.0,"1"]`, `true`, `["a",{"b":1}]`, `[null,"a"]`, `"\u0061"`, `[1e1000000000,"a"]`, `[]`} {
		f.Add(s, uint8(0), "a")
		f.Add(s, uint8(2), "1")
	}
	f.Fuzz(func(t *testing.T, claim string, kind uint8, want string) {
		v := []byte(claim)
		if end, err := scanValue(v, 0, 0, true); err != nil || end != len(v) {
			return // Lookup hands over one whole, valid value
		}
		w := Value{Kind: Kind(kind%3 + 1), Text: want}
		switch w.Kind {
		case KindNumber:
			c, err := CanonicalNumber(want)
			if err != nil {
				return
			}
			w.Text = c
		case KindBool:
			if want != "true" && want != "false" {
				return
			}
		}
		vals, ok := Values(v)
		ref := false
		for _, x := range vals {
			ref = ref || (x.Kind == w.Kind && x.Text == w.Text)
		}
		if got := Match(v, []Value{w}); got != (ok && ref) {
			t.Fatalf("Match(%s, %+v) = %v; Values: %+v, %v", claim, w, got, vals, ok)
		}
	})
}
