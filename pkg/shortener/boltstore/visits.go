package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// The visit statistics live in two buckets, both keyed by the link first
// so that one link's visits are one range:
//
//   - visitlog: codePrefix, sortable Unix seconds (8 bytes), a sequence
//     number (8 bytes) → raw visits, dropped by PruneVisits. Since schema
//     4 an entry holds the visits of one link of one batch in one UTC
//     hour (one insert per link and hour instead of one per visit); since
//     schema 5 each of its items is the number of visits of one second
//     with the same dimensions (the Service aggregates them in memory):
//     the byte visitCounted, then for each item uvarint(its Unix seconds
//     minus the key's), uvarint(its visits), encodeDims. The key's time
//     is the earliest item's, so every item of an entry is at or after it
//     and within its hour. Schema 4 wrote the byte visitGroup and items
//     without the count (one visit each), schema 3 one entry per visit
//     (the key's time being the visit's, the value encodeDims alone,
//     whose first byte is 0 or 1); such entries are read as they are.
//   - visitdays: codePrefix, the day's sortable Unix seconds (8 bytes),
//     the dimensions → the number of visits (8 bytes). Kept.
var (
	bucketVisitLog  = []byte("visitlog")
	bucketVisitDays = []byte("visitdays")
)

// keyOrder returns the indices of events in key order (code, then time;
// sequence numbers follow): bbolt splits nodes only at the commit, so a
// batch inserted in random order into few leaves costs a copy of the leaf
// per insert (quadratic; in order it appends). The events are neither
// copied nor moved. A small batch is sorted. A large one would cost
// about 3,700 instructions a visit to sort (70,000 events): its events
// are counted by code, the distinct codes sorted and the events placed
// by a counting sort, keeping their arrival order within a code, which
// is their time order but for the few that a flush took out of order:
// those codes' runs are sorted by time. (The counting sort costs more
// than sorting a batch of 1,000 events, all of different links.)
func keyOrder(events []shortener.VisitEvent) []int32 {
	if len(events) <= sortedBatch {
		order := make([]int32, len(events))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(i, j int32) int {
			a, b := &events[i], &events[j]
			if len(a.Code) != len(b.Code) {
				return len(a.Code) - len(b.Code)
			}
			if c := strings.Compare(a.Code, b.Code); c != 0 {
				return c
			}
			return a.At.Compare(b.At)
		})
		return order
	}
	ids := make([]int32, len(events)) // event → its code's group
	group := make(map[string]int32, 1024)
	var codes []string // group → code
	var counts []int32 // group → events
	for i := range events {
		g, ok := group[events[i].Code]
		if !ok {
			g = int32(len(codes))
			group[events[i].Code] = g
			codes = append(codes, events[i].Code)
			counts = append(counts, 0)
		}
		ids[i] = g
		counts[g]++
	}
	sorted := make([]int32, len(codes))
	for g := range sorted {
		sorted[g] = int32(g)
	}
	slices.SortFunc(sorted, func(a, b int32) int {
		x, y := codes[a], codes[b]
		if len(x) != len(y) { // codePrefix starts with the length
			return len(x) - len(y)
		}
		return strings.Compare(x, y)
	})
	next := make([]int32, len(codes)) // group → its next position in order
	pos := int32(0)
	for _, g := range sorted {
		next[g] = pos
		pos += counts[g]
	}
	order := make([]int32, len(events))
	for i, g := range ids {
		order[next[g]] = int32(i)
		next[g]++
	}
	byTime := func(i, j int32) int { return events[i].At.Compare(events[j].At) }
	for start := 0; start < len(order); {
		end := start + int(counts[ids[order[start]]])
		run := order[start:end]
		if !slices.IsSortedFunc(run, byTime) {
			slices.SortStableFunc(run, byTime)
		}
		start = end
	}
	return order
}

// sortedBatch is the largest batch keyOrder sorts whole.
const sortedBatch = 4096

// WriteVisits adds b's counts to the visits of existing links, stores
// its events and adds them to the daily aggregates, in one durable
// transaction (one fsync). A file's commit cannot be lost after it is
// acknowledged, so a retried batch is never one already written: the
// batch ID is not needed.
func (s *Store) WriteVisits(ctx context.Context, b shortener.VisitBatch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shortener: boltstore: write visits: %w", err)
	}
	if b.IsZero() {
		return nil
	}
	order := keyOrder(b.Events)
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := addCounts(tx, b.Counts); err != nil {
			return err
		}
		return recordEvents(tx, b.Events, order)
	})
	if err != nil {
		return s.wrap("write visits", err)
	}
	return nil
}

// recordEvents stores the events of existing links, in the order of
// keyOrder, and adds them to the daily aggregates.
func recordEvents(tx *bolt.Tx, events []shortener.VisitEvent, order []int32) error {
	links, vl, vd := tx.Bucket(bucketLinks), tx.Bucket(bucketVisitLog), tx.Bucket(bucketVisitDays)
	exists := map[string]bool{}
	days := map[string]int{} // visitdays key → its index in dayCounts
	var dayCounts []uint64   // visits to add
	// The keys and values of the raw visits, in one buffer: bbolt keeps
	// the slices it is given until the commit, and a position once
	// written is never written again (when append moves the buffer,
	// the slices given so far keep the old one alive).
	arena := make([]byte, 0, len(events)*64)
	var dk []byte
	for r := 0; r < len(order); {
		e := &events[order[r]]
		ok, seen := exists[e.Code]
		if !seen {
			ok = links.Get([]byte(e.Code)) != nil
			exists[e.Code] = ok
		}
		if !ok {
			r++
			continue
		}
		// One entry for the run of this link's visits in this hour.
		seq, err := vl.NextSequence()
		if err != nil {
			return err
		}
		at := e.At.Unix()
		hour := hourOf(at)
		start := len(arena)
		arena = binary.AppendUvarint(arena, uint64(len(e.Code)))
		arena = append(arena, e.Code...)
		plen := len(arena) - start
		arena = binary.BigEndian.AppendUint64(arena, sortableTime(e.At))
		arena = binary.BigEndian.AppendUint64(arena, seq)
		mid := len(arena)
		arena = append(arena, visitCounted)
		// The run's visits are of one day; consecutive visits with the
		// same dimensions are counted before one look-up in days.
		dk = append(dk[:0], arena[start:start+plen]...)
		dk = binary.BigEndian.AppendUint64(dk, sortableTime(shortener.BucketStart(e.At, false)))
		dayKey := len(dk)
		var prev []byte // dimensions of the last visits, n of them
		n := uint64(0)
		addDay := func() {
			dk = append(dk[:dayKey], prev...)
			if i, ok := days[string(dk)]; ok {
				dayCounts[i] += n
			} else {
				days[string(dk)] = len(dayCounts)
				dayCounts = append(dayCounts, n)
			}
		}
		for ; r < len(order); r++ {
			f := &events[order[r]]
			t := f.At.Unix()
			if f.Code != e.Code || hourOf(t) != hour {
				break
			}
			c := uint64(f.Visits())
			arena = binary.AppendUvarint(arena, uint64(t-at))
			arena = binary.AppendUvarint(arena, c)
			d := len(arena)
			arena = encodeDims(arena, f)
			if n > 0 && bytes.Equal(arena[d:], prev) {
				n += c
				continue
			}
			if n > 0 {
				addDay()
			}
			prev, n = arena[d:len(arena):len(arena)], c
		}
		addDay()
		if err := vl.Put(arena[start:mid:mid], arena[mid:len(arena):len(arena)]); err != nil {
			return err
		}
	}
	// One read and one write per day and dimensions, in key order.
	for _, k := range slices.Sorted(maps.Keys(days)) {
		var n uint64
		if v := vd.Get([]byte(k)); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		if err := vd.Put([]byte(k), binary.BigEndian.AppendUint64(nil, n+dayCounts[days[k]])); err != nil {
			return err
		}
	}
	return nil
}

// pruneChunk bounds the visitlog entries one PruneVisits transaction
// deletes or rewrites, so that creates are not held up for long.
const pruneChunk = 10_000

// PruneVisits drops the raw visits before t, in transactions of at most
// pruneChunk changed entries. An entry whose visits are partly before t
// is rewritten with the others (under the same key: its time is still
// at or before theirs, within their hour).
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
			type change struct{ key, val []byte } // val nil: delete
			var changes []change
			k, v := c.First()
			if resume != nil {
				k, v = c.Seek(resume)
			}
			for ; k != nil && len(changes) < pruneChunk; k, v = c.Next() {
				if len(k) < 16 {
					return errCorruptVisit
				}
				at := timeOfSortable(binary.BigEndian.Uint64(k[len(k)-16:]))
				if !at.Before(before) {
					continue
				}
				val, err := pruneEntry(at.Unix(), v, before)
				if err != nil {
					return err
				}
				if val == nil || len(val) != len(v) {
					changes = append(changes, change{bytes.Clone(k), val})
				}
			}
			done = k == nil
			resume = bytes.Clone(k)
			for _, ch := range changes {
				var err error
				if ch.val == nil {
					err = b.Delete(ch.key)
				} else {
					err = b.Put(ch.key, ch.val)
				}
				if err != nil {
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

// pruneEntry returns the visitlog value v (key time at, Unix seconds)
// without its visits before t: nil when none is left, v itself when none
// was before t.
func pruneEntry(at int64, v []byte, before time.Time) ([]byte, error) {
	if len(v) == 0 {
		return nil, errCorruptVisit
	}
	kind := v[0]
	if kind != visitGroup && kind != visitCounted { // schema 3: one visit, at the key's time
		return nil, nil
	}
	kept := []byte{kind}
	var e shortener.VisitEvent
	for rest := v[1:]; len(rest) > 0; {
		d, _, next, err := nextVisitItem(kind, rest, &e)
		if err != nil {
			return nil, err
		}
		if !time.Unix(at+d, 0).Before(before) {
			kept = append(kept, rest[:len(rest)-len(next)]...)
		}
		rest = next
	}
	if len(kept) == 1 {
		return nil, nil
	}
	if len(kept) == len(v) {
		return v, nil
	}
	return kept, nil
}

// VisitStats answers q with one range scan: of the daily aggregates, or
// by hour of the raw visits.
func (s *Store) VisitStats(ctx context.Context, code string, q shortener.StatsQuery) (shortener.VisitStats, error) {
	if err := ctx.Err(); err != nil {
		return shortener.VisitStats{}, fmt.Errorf("shortener: boltstore: visit stats: %w", err)
	}
	acc := shortener.NewStatsAccumulator(q)
	prefix := codePrefix(code, 8)
	fromT := q.From
	if q.ByHour {
		// An entry of raw visits holds one hour's, from its key's time on.
		fromT = shortener.BucketStart(q.From, true)
	}
	from := binary.BigEndian.AppendUint64(bytes.Clone(prefix), sortableTime(fromT))
	to := binary.BigEndian.AppendUint64(bytes.Clone(prefix), sortableTime(q.To))
	fromU, toU := q.From.Unix(), q.To.Unix()
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
			at := timeOfSortable(binary.BigEndian.Uint64(k[len(prefix):]))
			if q.ByHour {
				e := shortener.VisitEvent{Code: code}
				err := decodeVisitLog(at.Unix(), v, &e, func(t, n int64) error {
					if t >= fromU && t < toU {
						e.At = time.Unix(t, 0).UTC()
						acc.Add(e, n)
					}
					return nil
				})
				if err != nil {
					return err
				}
				continue
			}
			e := shortener.VisitEvent{Code: code, At: at}
			if len(v) != 8 {
				return errCorruptVisit
			}
			if err := decodeDims(k[len(prefix)+8:], &e); err != nil {
				return err
			}
			acc.Add(e, int64(binary.BigEndian.Uint64(v)))
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
