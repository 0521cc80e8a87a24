package boltstore

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// Record versions: the first byte of a link record.
const (
	recordV1 = 1 // schema 1: created_at, created_by, url
	recordV2 = 2 // schema 2: + expires_at, max_visits
)

// encode lays a link out as: version byte (2), created_at (varint Unix
// microseconds), len(created_by) (uvarint), created_by, expires_at (varint
// Unix microseconds, 0 for never), max_visits (uvarint), url (the rest).
// Visits live in their own bucket, so that counting them never rewrites
// the record.
func encode(l shortener.Link) []byte {
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(l.CreatedBy)+len(l.URL))
	b = append(b, recordV2)
	b = binary.AppendVarint(b, l.CreatedAt.UnixMicro())
	b = binary.AppendUvarint(b, uint64(len(l.CreatedBy)))
	b = append(b, l.CreatedBy...)
	var exp int64
	if !l.ExpiresAt.IsZero() {
		exp = l.ExpiresAt.UnixMicro()
	}
	b = binary.AppendVarint(b, exp)
	b = binary.AppendUvarint(b, uint64(max(l.MaxVisits, 0)))
	return append(b, l.URL...)
}

// decode parses a record of either version; v may be memory-mapped, so
// everything is copied.
func decode(code string, v []byte) (shortener.Link, error) {
	// The error is built only when needed: decode is on the redirect path.
	bad := func() error { return fmt.Errorf("shortener: boltstore: corrupt record for %q", code) }
	if len(v) < 1 || (v[0] != recordV1 && v[0] != recordV2) {
		return shortener.Link{}, bad()
	}
	version := v[0]
	v = v[1:]
	us, n := binary.Varint(v)
	if n <= 0 {
		return shortener.Link{}, bad()
	}
	v = v[n:]
	ln, n := binary.Uvarint(v)
	if n <= 0 || ln > uint64(len(v)-n) {
		return shortener.Link{}, bad()
	}
	v = v[n:]
	l := shortener.Link{
		Code:      code,
		CreatedBy: string(v[:ln]),
		CreatedAt: time.UnixMicro(us).UTC(),
	}
	v = v[ln:]
	if version == recordV2 {
		exp, n := binary.Varint(v)
		if n <= 0 {
			return shortener.Link{}, bad()
		}
		v = v[n:]
		maxV, n := binary.Uvarint(v)
		if n <= 0 || maxV > shortener.MaxMaxVisits {
			return shortener.Link{}, bad()
		}
		v = v[n:]
		if exp != 0 {
			l.ExpiresAt = time.UnixMicro(exp).UTC()
		}
		l.MaxVisits = int64(maxV)
	}
	l.URL = string(v)
	return l, nil
}

// ownerKey is the key of a link in the owner index: uvarint(len(owner)),
// owner, then created_at and the code arranged so that byte order is the
// list order (newest first, then code descending): 8 bytes of inverted
// order-preserving Unix microseconds, the code's bytes inverted, and 0xff
// (greater than any inverted code byte, so that a longer code sorts
// before its prefix).
func ownerKey(owner string, createdAt time.Time, code string) []byte {
	k := ownerPrefix(owner, 8+len(code)+1)
	k = binary.BigEndian.AppendUint64(k, ^(uint64(createdAt.UnixMicro()) ^ 1<<63))
	for i := 0; i < len(code); i++ {
		k = append(k, ^code[i])
	}
	return append(k, 0xff)
}

// ownerPrefix is the part of ownerKey shared by every link of owner, with
// room for extra more bytes.
func ownerPrefix(owner string, extra int) []byte {
	k := make([]byte, 0, binary.MaxVarintLen64+len(owner)+extra)
	k = binary.AppendUvarint(k, uint64(len(owner)))
	return append(k, owner...)
}

// codeOfOwnerKey returns the code of an ownerKey whose prefix has plen
// bytes.
func codeOfOwnerKey(k []byte, plen int) (string, bool) {
	if len(k) < plen+8+2 || k[len(k)-1] != 0xff {
		return "", false
	}
	inv := k[plen+8 : len(k)-1]
	code := make([]byte, len(inv))
	for i, c := range inv {
		code[i] = ^c
	}
	return string(code), true
}

// putExtras writes what a new link needs besides its record: its owner
// index entry and its visits, when not zero.
func putExtras(tx *bolt.Tx, l shortener.Link) error {
	if l.CreatedBy != "" {
		if err := tx.Bucket(bucketOwners).Put(ownerKey(l.CreatedBy, l.CreatedAt, l.Code), nil); err != nil {
			return err
		}
	}
	if l.Visits != 0 {
		return tx.Bucket(bucketVisits).Put([]byte(l.Code), binary.BigEndian.AppendUint64(nil, uint64(l.Visits)))
	}
	return nil
}

// visitsOf reads the visits of code (0 when none were written).
func visitsOf(tx *bolt.Tx, code string) int64 {
	v := tx.Bucket(bucketVisits).Get([]byte(code))
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}
