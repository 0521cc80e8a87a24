package boltstore

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// putSchema3Visit writes e as schema 3 did: one visitlog entry per visit
// (the daily aggregates are left out: only the raw visits changed).
func putSchema3Visit(t *testing.T, tx *bolt.Tx, e shortener.VisitEvent) {
	t.Helper()
	vl := tx.Bucket(bucketVisitLog)
	seq, err := vl.NextSequence()
	if err != nil {
		t.Fatal(err)
	}
	k := codePrefix(e.Code, 16)
	k = binary.BigEndian.AppendUint64(k, sortableTime(e.At))
	k = binary.BigEndian.AppendUint64(k, seq)
	if err := vl.Put(k, encodeDims(nil, &e)); err != nil {
		t.Fatal(err)
	}
}

func hourly(t *testing.T, s *Store, code string, from, to time.Time) []shortener.StatsBucket {
	t.Helper()
	st, err := s.VisitStats(t.Context(), code, shortener.StatsQuery{From: from, To: to, ByHour: true})
	if err != nil {
		t.Fatal(err)
	}
	return st.Series
}

func checkSeries(t *testing.T, name string, got []shortener.StatsBucket, want ...int64) {
	t.Helper()
	var totals []int64
	for _, b := range got {
		totals = append(totals, b.Total)
	}
	if len(totals) != len(want) {
		t.Fatalf("%s: hourly totals %v, want %v", name, totals, want)
	}
	for i := range want {
		if totals[i] != want[i] {
			t.Fatalf("%s: hourly totals %v, want %v", name, totals, want)
		}
	}
}

// A file of schema 3 (one visitlog entry per visit) opens as schema 4,
// and its visits are read and pruned alongside the grouped ones written
// since, in the same hours.
func TestSchema3VisitsUpgrade(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "links.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, shortener.Link{Code: "old0001", URL: "https://example.com/", CreatedAt: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	h := time.Hour
	day := time.Date(2031, 3, 10, 0, 0, 0, 0, time.UTC)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, m := range []time.Duration{10, 20, 70} { // hours 0, 0, 1
			putSchema3Visit(t, tx, shortener.VisitEvent{Code: "old0001", At: day.Add(m * time.Minute), Device: "desktop", Browser: "firefox"})
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, binary.BigEndian.AppendUint64(nil, 3))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keyVersion)); v != schemaVersion {
			t.Errorf("schema version after open: %d, want %d", v, schemaVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "schema 3 visits", hourly(t, s, "old0001", day, day.Add(24*h)), 2, 1)
	// New visits in the same hours, one batch: grouped entries.
	var events []shortener.VisitEvent
	for _, m := range []time.Duration{5, 15, 25, 65, 119} {
		events = append(events, shortener.VisitEvent{Code: "old0001", At: day.Add(m * time.Minute), Device: "mobile", Browser: "safari"})
	}
	if err := s.WriteVisits(ctx, shortener.VisitBatch{Events: events}); err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "both", hourly(t, s, "old0001", day, day.Add(24*h)), 5, 3)
	checkSeries(t, "hour 1", hourly(t, s, "old0001", day.Add(h), day.Add(2*h)), 3)
	// Raw visits are kept by their own time: a range starting inside an
	// entry's hour, and pruning inside one, count and keep visit by visit.
	checkSeries(t, "from 0:16", hourly(t, s, "old0001", day.Add(16*time.Minute), day.Add(24*h)), 2, 3)
	checkSeries(t, "to 1:06", hourly(t, s, "old0001", day, day.Add(66*time.Minute)), 5, 1)
	if err := s.PruneVisits(ctx, day.Add(16*time.Minute)); err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "pruned before 0:16", hourly(t, s, "old0001", day, day.Add(24*h)), 2, 3)
	if err := s.PruneVisits(ctx, day.Add(66*time.Minute)); err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "pruned before 1:06", hourly(t, s, "old0001", day, day.Add(24*h)), 2)
	if err := s.PruneVisits(ctx, day.Add(2*h)); err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "pruned before 2:00", hourly(t, s, "old0001", day, day.Add(24*h)))
	err = s.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketVisitLog).Stats().KeyN; n != 0 {
			t.Errorf("%d visitlog entries left after pruning every visit", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The daily aggregates were untouched: the 5 new visits (schema 3's
	// were written without theirs here).
	st, err := s.VisitStats(ctx, "old0001", shortener.StatsQuery{From: day, To: day.Add(24 * h)})
	if err != nil || len(st.Series) != 1 || st.Series[0].Total != 5 {
		t.Fatalf("daily after pruning: %+v, %v", st.Series, err)
	}
}

// A group entry that is cut short or holds an offset beyond its hour is
// reported as corrupt, never read past.
func TestDecodeVisitLogCorrupt(t *testing.T) {
	e := shortener.VisitEvent{Device: "desktop"}
	good := append([]byte{visitGroup, 5}, encodeDims(nil, &e)...)
	for name, v := range map[string][]byte{
		"empty":          {},
		"group, cut":     good[:len(good)-1],
		"offset >= 1 h":  append([]byte{visitGroup, 0x90, 0x1c}, encodeDims(nil, &e)...),
		"bad bot flag":   {visitGroup, 0, 7, 0, 0, 0, 0},
		"schema 3, tail": append(encodeDims(nil, &e), 0),
	} {
		var got shortener.VisitEvent
		if err := decodeVisitLog(0, v, &got, func(int64, int64) error { return nil }); !errors.Is(err, errCorruptVisit) {
			t.Errorf("%s: %v, want errCorruptVisit", name, err)
		}
		// Pruning deletes a schema 3 entry before t unread; it reads the
		// others.
		if _, err := pruneEntry(0, v, time.Unix(1, 0)); name != "schema 3, tail" && !errors.Is(err, errCorruptVisit) {
			t.Errorf("%s: pruneEntry: %v, want errCorruptVisit", name, err)
		}
	}
	var n int
	if err := decodeVisitLog(0, good, &e, func(t, _ int64) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("good entry: %v, %d visits", err, n)
	}
}

// keyOrder gives every event once, in key order: code (shorter first),
// then time, whatever the arrival order, for batches sorted whole and
// counted by code.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	codes := []string{"b", "a", "zz", "ab", "abc", "aa"}
	t0 := time.Date(2031, 3, 10, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 2, 50, sortedBatch, sortedBatch + 1, 3 * sortedBatch} {
		events := make([]shortener.VisitEvent, n)
		for i := range events {
			// Mostly in time order, as a flush gives them, some not.
			at := t0.Add(time.Duration(i) * time.Second)
			if r.IntN(10) == 0 {
				at = t0.Add(time.Duration(r.IntN(n+1)) * time.Second)
			}
			events[i] = shortener.VisitEvent{Code: codes[r.IntN(len(codes))], At: at}
		}
		order := keyOrder(events)
		if len(order) != n {
			t.Fatalf("n=%d: %d indices", n, len(order))
		}
		seen := make([]bool, n)
		for k, i := range order {
			if seen[i] {
				t.Fatalf("n=%d: event %d twice", n, i)
			}
			seen[i] = true
			if k == 0 {
				continue
			}
			a, b := events[order[k-1]], events[i]
			less := len(a.Code) < len(b.Code) || len(a.Code) == len(b.Code) && (a.Code < b.Code || a.Code == b.Code && !b.At.Before(a.At))
			if !less {
				t.Fatalf("n=%d: %+v before %+v", n, a, b)
			}
		}
	}
}
