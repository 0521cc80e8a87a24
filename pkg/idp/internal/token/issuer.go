package token

// IssuerOf returns the value of the payload's top-level "iss" member, a
// JSON string, decoded, and whether there is one. It reads no further
// than that member and validates only what it crosses: it routes a token
// to the keys of the issuer it names before any signature work, and the
// claims are decoded and checked in full (DecodeClaims, which refuses a
// second iss) once the signature holds. Member names are matched as
// DecodeClaims matches them: exactly, after JSON unescaping.
func IssuerOf(payload []byte) (iss []byte, ok bool) {
	b := payload
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, false
	}
	for i < len(b) && b[i] == '"' {
		nameEnd, escaped, err := scanString(b, i)
		if err != nil {
			return nil, false
		}
		isIss := string(b[i+1:nameEnd-1]) == "iss"
		if !isIss && escaped {
			name, err := stringValue(nil, b[i:nameEnd], true)
			if err != nil {
				return nil, false
			}
			isIss = name == "iss"
		}
		i = skipSpace(b, nameEnd)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		valEnd, err := scanValue(b, i, 1, false)
		if err != nil {
			return nil, false
		}
		if isIss {
			v := b[i:valEnd]
			if v[0] != '"' {
				return nil, false
			}
			_, escaped, _ := scanString(v, 0) // scanned by scanValue
			if !escaped {
				return v[1 : len(v)-1], true
			}
			s, err := stringValue(nil, v, true)
			if err != nil {
				return nil, false
			}
			return []byte(s), true
		}
		i = skipSpace(b, valEnd)
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = skipSpace(b, i+1)
	}
	return nil, false
}
