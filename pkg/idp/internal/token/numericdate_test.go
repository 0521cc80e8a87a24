package token

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzNumericDate decodes any JSON number as exp, nbf and iat: it reads
// as encoding/json reads it (±Inf beyond float64's range, never NaN), and
// NumericTime orders it against every reference second as the number
// itself is ordered, never reversed by an overflow (1e19 is not the far
// past), within ±MaxNumericDate seconds.
func FuzzNumericDate(f *testing.F) {
	for _, seed := range []string{"1795443825", "1.5e9", "-1", "0", "-0", "0.999999999", "-1.5", "1e19",
		"9223372036854775807", "9223372036854775808", "-9223372036854775809", "1e30", "1E+300", "1e400",
		"-1e400", "1e-400", "9007199254740993", "32503680000.5", "9223372036.854775807"} {
		f.Add(seed)
	}
	refs := []float64{0, 1, -1, 1 << 31, -(1 << 31), 1795443825, 9223372036, -9223372037,
		MaxNumericDate - 1, -(MaxNumericDate - 1), float64(time.Now().Unix())}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return // not one JSON value (FuzzDecodeClaims covers malformed payloads)
		}
		v := strings.Trim(s, " \t\r\n")
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			return // a string, literal, object or array: refused or absent, not a date
		}
		payload := []byte(`{"exp":` + s + `,"nbf":` + s + `,"iat":` + s + `}`)
		c, err := DecodeClaims(nil, payload)
		var want float64
		jsonErr := json.Unmarshal([]byte(s), &want)
		if err != nil {
			if jsonErr == nil && json.Valid(payload) {
				t.Fatalf("%s: refused (%v), encoding/json reads %v", s, err, want)
			}
			return
		}
		if !c.HasExp || !c.HasNbf || !c.HasIat {
			t.Fatalf("%s: dates not read", s)
		}
		if jsonErr != nil {
			// Beyond float64: the sign decides.
			if inf, perr := strconv.ParseFloat(v, 64); perr == nil || !math.IsInf(inf, 0) || c.Exp != inf {
				t.Fatalf("%s: read as %v, encoding/json refuses it (%v)", s, c.Exp, jsonErr)
			}
			want = c.Exp
		}
		if c.Exp != want || c.Nbf != want || c.Iat != want {
			t.Fatalf("%s: read as %v %v %v, want %v", s, c.Exp, c.Nbf, c.Iat, want)
		}
		if math.IsNaN(c.Exp) {
			t.Fatalf("%s: NaN", s)
		}
		got := NumericTime(c.Exp)
		if u := got.Unix(); u > MaxNumericDate || u < -MaxNumericDate {
			t.Fatalf("%s: %d s, beyond ±2^53", s, u)
		}
		for _, ref := range append(refs, math.Floor(want), math.Ceil(want)) {
			if math.IsInf(ref, 0) || math.Abs(ref) >= MaxNumericDate {
				continue
			}
			rt := time.Unix(int64(ref), 0)
			switch {
			case want > ref && got.Before(rt):
				t.Fatalf("%s: after %v s, read as %v (before it)", s, ref, got)
			case want < ref && got.After(rt):
				t.Fatalf("%s: before %v s, read as %v (after it)", s, ref, got)
			case want == ref && !got.Equal(rt):
				t.Fatalf("%s: %v s exactly, read as %v", s, ref, got)
			}
		}
	})
}
