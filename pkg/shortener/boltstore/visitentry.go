package boltstore

// The layout of the statistics entries (see visits.go): keys by link and
// time, the visit's dimensions, and visitlog values of one or a group of
// visits.

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// codePrefix is the part of a statistics key shared by every entry of a
// link: uvarint(len(code)), code.
func codePrefix(code string, extra int) []byte {
	k := make([]byte, 0, binary.MaxVarintLen64+len(code)+extra)
	k = binary.AppendUvarint(k, uint64(len(code)))
	return append(k, code...)
}

// sortableTime is t's Unix seconds, ordered as bytes.
func sortableTime(t time.Time) uint64 { return uint64(t.Unix()) ^ 1<<63 }

func timeOfSortable(v uint64) time.Time { return time.Unix(int64(v^1<<63), 0).UTC() }

// encodeDims lays out the dimensions: the bot flag (0 or 1), then
// referrer host, device, browser and country, each uvarint-length
// prefixed.
func encodeDims(b []byte, e *shortener.VisitEvent) []byte {
	bot := byte(0)
	if e.Bot {
		bot = 1
	}
	b = append(b, bot)
	for _, s := range [4]string{e.ReferrerHost, e.Device, e.Browser, e.Country} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

var errCorruptVisit = errors.New("shortener: boltstore: corrupt visit entry")

// decodeDims parses encodeDims into e (strings copied), the whole of v.
func decodeDims(v []byte, e *shortener.VisitEvent) error {
	rest, err := decodeDimsPrefix(v, e)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errCorruptVisit
	}
	return nil
}

// decodeDimsPrefix parses encodeDims at the start of v into e (strings
// copied) and returns what follows.
func decodeDimsPrefix(v []byte, e *shortener.VisitEvent) ([]byte, error) {
	if len(v) < 1 || v[0] > 1 {
		return nil, errCorruptVisit
	}
	e.Bot = v[0] == 1
	v = v[1:]
	var out [4]string
	for i := range out {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > uint64(len(v)-k) {
			return nil, errCorruptVisit
		}
		out[i] = string(v[k : k+int(n)])
		v = v[k+int(n):]
	}
	e.ReferrerHost, e.Device, e.Browser, e.Country = out[0], out[1], out[2], out[3]
	return v, nil
}

// The first byte of a visitlog value: visitGroup (schema 4) for a group
// of visits, each item uvarint(seconds after the key's time), then
// encodeDims; visitCounted (schema 5) for a group of counted items, each
// uvarint(seconds after the key's time), uvarint(visits), encodeDims. A
// schema 3 value (one visit) starts with 0 or 1 (encodeDims).
const (
	visitGroup   = 2
	visitCounted = 3
)

// hourOf is the UTC hour of Unix seconds u (hours since the epoch).
func hourOf(u int64) int64 {
	h := u / 3600
	if u%3600 < 0 {
		h--
	}
	return h
}

// nextVisitItem parses the item at the start of rest, the items of a
// visitlog value of kind (visitGroup or visitCounted), into e: it returns
// the item's offset from the key's time, its visits and what follows.
func nextVisitItem(kind byte, rest []byte, e *shortener.VisitEvent) (d, n int64, next []byte, err error) {
	off, k := binary.Uvarint(rest)
	if k <= 0 || off >= 3600 {
		return 0, 0, nil, errCorruptVisit
	}
	rest, n = rest[k:], 1
	if kind == visitCounted {
		c, k := binary.Uvarint(rest)
		if k <= 0 || c == 0 || c > 1<<62 {
			return 0, 0, nil, errCorruptVisit
		}
		rest, n = rest[k:], int64(c)
	}
	if next, err = decodeDimsPrefix(rest, e); err != nil {
		return 0, 0, nil, err
	}
	return int64(off), n, next, nil
}

// decodeVisitLog calls fn with the time (Unix seconds), the number of
// visits and the dimensions (in e) of each item of the visitlog entry
// whose key's time is at (Unix seconds) and value v, in the entry's
// order. e's Code is left as it is.
func decodeVisitLog(at int64, v []byte, e *shortener.VisitEvent, fn func(t, n int64) error) error {
	if len(v) == 0 {
		return errCorruptVisit
	}
	kind := v[0]
	if kind != visitGroup && kind != visitCounted { // schema 3: one visit
		if err := decodeDims(v, e); err != nil {
			return err
		}
		return fn(at, 1)
	}
	for v = v[1:]; len(v) > 0; {
		d, n, next, err := nextVisitItem(kind, v, e)
		if err != nil {
			return err
		}
		v = next
		if err := fn(at+d, n); err != nil {
			return err
		}
	}
	return nil
}
