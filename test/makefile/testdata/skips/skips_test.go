// Package skips is run by TestMakeTestSaysWhatSkipped through `make test`:
// a test that skips for want of PostgreSQL, and one that fails when asked.
package skips

import (
	"os"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
)

func TestNeedsPostgres(t *testing.T) { pgtest.DSN(t, "the fixture suite") }

func TestFailsWhenAsked(t *testing.T) {
	if os.Getenv("MAKEFILE_FIXTURE_FAIL") != "" {
		t.Fatal("failing as asked")
	}
}
