package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// The visit statistics (schema 3) live in two buckets, both keyed by the
// link first so that one link's visits are one range:
//
//   - visitlog: codePrefix, sortable Unix seconds (8 bytes), a sequence
//     number (8 bytes) → the event's dimensions (see encodeDims). Raw
//     visits, dropped by PruneVisits.
//   - visitdays: codePrefix, the day's sortable Unix seconds (8 bytes),
//     the dimensions → the number of visits (8 bytes). Kept.
var (
	bucketVisitLog  = []byte("visitlog")
	bucketVisitDays = []byte("visitdays")
)

var _ shortener.VisitStatsStore = (*Store)(nil)

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
func encodeDims(b []byte, e shortener.VisitEvent) []byte {
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

// decodeDims parses encodeDims into e (strings copied).
func decodeDims(v []byte, e *shortener.VisitEvent) error {
	if len(v) < 1 || v[0] > 1 {
		return errCorruptVisit
	}
	e.Bot = v[0] == 1
	v = v[1:]
	var out [4]string
	for i := range out {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > uint64(len(v)-k) {
			return errCorruptVisit
		}
		out[i] = string(v[k : k+int(n)])
		v = v[k+int(n):]
	}
	if len(v) != 0 {
		return errCorruptVisit
	}
	e.ReferrerHost, e.Device, e.Browser, e.Country = out[0], out[1], out[2], out[3]
	return nil
}

// RecordVisits stores the events of existing links and adds them to the
// daily aggregates, in one durable transaction.
func (s *Store) RecordVisits(ctx context.Context, events []shortener.VisitEvent) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shortener: boltstore: record visits: %w", err)
	}
	// In key order (code, then time; sequence numbers follow): bbolt
	// splits nodes only at the commit, so a batch inserted in random order
	// into few leaves costs a copy of the leaf per insert (quadratic; in
	// order it appends). The order is one of indices: the events are
	// neither copied nor moved.
	order := make([]int32, len(events))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &events[i], &events[j]
		if len(a.Code) != len(b.Code) { // codePrefix starts with the length
			return len(a.Code) - len(b.Code)
		}
		if c := strings.Compare(a.Code, b.Code); c != 0 {
			return c
		}
		return a.At.Compare(b.At)
	})
	err := s.db.Update(func(tx *bolt.Tx) error {
		links, vl, vd := tx.Bucket(bucketLinks), tx.Bucket(bucketVisitLog), tx.Bucket(bucketVisitDays)
		exists := map[string]bool{}
		days := map[string]uint64{} // visitdays key → visits to add
		// The keys and values of the raw visits, in one buffer: bbolt keeps
		// the slices it is given until the commit, and a position once
		// written is never written again (when append moves the buffer,
		// the slices given so far keep the old one alive).
		arena := make([]byte, 0, len(events)*64)
		var dk []byte
		var prev string
		ok := false
		for _, i := range order {
			e := &events[i]
			if e.Code != prev || i == order[0] {
				var seen bool
				if ok, seen = exists[e.Code]; !seen {
					ok = links.Get([]byte(e.Code)) != nil
					exists[e.Code] = ok
				}
				prev = e.Code
			}
			if !ok {
				continue
			}
			seq, err := vl.NextSequence()
			if err != nil {
				return err
			}
			start := len(arena)
			arena = binary.AppendUvarint(arena, uint64(len(e.Code)))
			arena = append(arena, e.Code...)
			arena = binary.BigEndian.AppendUint64(arena, sortableTime(e.At))
			arena = binary.BigEndian.AppendUint64(arena, seq)
			mid := len(arena)
			arena = encodeDims(arena, *e)
			key, val := arena[start:mid:mid], arena[mid:len(arena):len(arena)]
			if err := vl.Put(key, val); err != nil {
				return err
			}
			dk = append(dk[:0], key[:mid-start-16]...)
			dk = binary.BigEndian.AppendUint64(dk, sortableTime(shortener.BucketStart(e.At, false)))
			dk = append(dk, val...)
			if n, ok := days[string(dk)]; ok {
				days[string(dk)] = n + 1
			} else {
				days[string(dk)] = 1
			}
		}
		// One read and one write per day and dimensions, in key order.
		for _, k := range slices.Sorted(maps.Keys(days)) {
			var n uint64
			if v := vd.Get([]byte(k)); len(v) == 8 {
				n = binary.BigEndian.Uint64(v)
			}
			if err := vd.Put([]byte(k), binary.BigEndian.AppendUint64(nil, n+days[k])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.wrap("record visits", err)
	}
	return nil
}

// pruneChunk bounds the raw visits one PruneVisits transaction deletes,
// so that creates are not held up for long.
const pruneChunk = 10_000

// PruneVisits drops the raw visits before t, in transactions of at most
// pruneChunk deletions.
func (s *Store) PruneVisits(ctx context.Context, before time.Time) error {
	var resume []byte
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shortener: boltstore: prune visits: %w", err)
		}
		var done bool
		err := s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketVisitLog)
			c := b.Cursor()
			var old [][]byte
			k, _ := c.First()
			if resume != nil {
				k, _ = c.Seek(resume)
			}
			for ; k != nil && len(old) < pruneChunk; k, _ = c.Next() {
				if len(k) < 16 {
					return errCorruptVisit
				}
				if timeOfSortable(binary.BigEndian.Uint64(k[len(k)-16:])).Before(before) {
					old = append(old, bytes.Clone(k))
				}
			}
			done = k == nil
			resume = bytes.Clone(k)
			for _, k := range old {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return s.wrap("prune visits", err)
		}
		if done {
			return nil
		}
	}
}

// VisitStats answers q with one range scan: of the daily aggregates, or
// by hour of the raw visits.
func (s *Store) VisitStats(ctx context.Context, code string, q shortener.StatsQuery) (shortener.VisitStats, error) {
	if err := ctx.Err(); err != nil {
		return shortener.VisitStats{}, fmt.Errorf("shortener: boltstore: visit stats: %w", err)
	}
	acc := shortener.NewStatsAccumulator(q)
	prefix := codePrefix(code, 8)
	from := binary.BigEndian.AppendUint64(bytes.Clone(prefix), sortableTime(q.From))
	to := binary.BigEndian.AppendUint64(bytes.Clone(prefix), sortableTime(q.To))
	err := s.db.View(func(tx *bolt.Tx) error {
		bucket := bucketVisitDays
		if q.ByHour {
			bucket = bucketVisitLog
		}
		c := tx.Bucket(bucket).Cursor()
		for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, to) < 0; k, v = c.Next() {
			if len(k) < len(prefix)+8 {
				return errCorruptVisit
			}
			e := shortener.VisitEvent{Code: code, At: timeOfSortable(binary.BigEndian.Uint64(k[len(prefix):]))}
			n := int64(1)
			if q.ByHour {
				if err := decodeDims(v, &e); err != nil {
					return err
				}
			} else {
				if len(v) != 8 {
					return errCorruptVisit
				}
				if err := decodeDims(k[len(prefix)+8:], &e); err != nil {
					return err
				}
				n = int64(binary.BigEndian.Uint64(v))
			}
			acc.Add(e, n)
		}
		return nil
	})
	if err != nil {
		return shortener.VisitStats{}, s.wrap("visit stats", err)
	}
	return acc.Result(), nil
}

// deleteVisits removes every statistic of code (its link is deleted).
func deleteVisits(tx *bolt.Tx, code string) error {
	prefix := codePrefix(code, 0)
	for _, name := range [][]byte{bucketVisitLog, bucketVisitDays} {
		b := tx.Bucket(name)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}
