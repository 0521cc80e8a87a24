package main

import (
	"encoding/json"
	"os"
	"slices"
)

// keepPrevious adds to the report the samples, notes and peer builds of
// the previous run (its results.json at path) for the groups this run did
// not measure, with a note naming that run: a run of some groups (-only)
// then updates the results page without dropping the others.
func (h *harness) keepPrevious(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var old report
	if err := json.Unmarshal(b, &old); err != nil {
		return err
	}
	var groups []string
	for _, s := range old.Samples {
		if h.selected(s.Group) {
			continue
		}
		h.rep.Samples = append(h.rep.Samples, s)
		if !slices.Contains(groups, s.Group) {
			groups = append(groups, s.Group)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	h.rep.note("kept from the run of %s (commit %s, %d round(s) of %s per case): the groups %q",
		old.Started.Format("2006-01-02 15:04 MST"), old.Machine.Commit, old.Rounds, old.Duration, groups)
	for _, n := range old.Notes {
		h.rep.note("(run of %s) %s", old.Started.Format("2006-01-02"), n)
	}
	h.rep.Peers = append(h.rep.Peers, old.Peers...)
	return nil
}
