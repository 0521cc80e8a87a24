// Package visitinfotest builds small GeoIP databases for tests, with
// MaxMind's writer (github.com/maxmind/mmdbwriter). Not for production.
package visitinfotest

import (
	"bytes"
	"net"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
)

// Networks are the networks of CountryDB and their countries:
// documentation ranges (RFC 5737, RFC 3849).
var Networks = map[string]string{"192.0.2.0/24": "DE", "198.51.100.0/24": "JP", "2001:db8:1::/48": "BR"}

// CountryDBBytes returns a MaxMind-format database mapping each network
// (CIDR) of nets to its country (country.iso_code). It fails t on error.
func CountryDBBytes(t testing.TB, nets map[string]string) []byte {
	t.Helper()
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "Test-Country", RecordSize: 24, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, iso := range nets {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Insert(n, mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(iso)}}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// CountryDB is CountryDBBytes(t, Networks), opened; it is closed when
// the test ends.
func CountryDB(t testing.TB) *visitinfo.GeoIP {
	t.Helper()
	g, err := visitinfo.OpenGeoIPBytes(CountryDBBytes(t, Networks))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}
