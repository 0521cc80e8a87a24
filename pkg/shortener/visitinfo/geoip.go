package visitinfo

import (
	"fmt"
	"net/netip"

	"github.com/oschwald/maxminddb-golang/v2"
)

// GeoIP maps addresses to countries with a MaxMind-format database
// (GeoLite2-Country, GeoIP2-Country or -City, DB-IP's country lite, or
// any database with country.iso_code). It is safe for concurrent use.
type GeoIP struct {
	r *maxminddb.Reader
}

// OpenGeoIP opens the database file at path.
func OpenGeoIP(path string) (*GeoIP, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("visitinfo: open GeoIP database: %w", err)
	}
	return &GeoIP{r: r}, nil
}

// OpenGeoIPBytes reads a database held in memory.
func OpenGeoIPBytes(b []byte) (*GeoIP, error) {
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, fmt.Errorf("visitinfo: read GeoIP database: %w", err)
	}
	return &GeoIP{r: r}, nil
}

// Close releases the database.
func (g *GeoIP) Close() error { return g.r.Close() }

// Country returns the ISO 3166-1 alpha-2 code of ip's country, in upper
// case, or "" when the database has none. The address is not kept.
func (g *GeoIP) Country(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	var iso string
	if err := g.r.Lookup(ip.Unmap()).DecodePath(&iso, "country", "iso_code"); err != nil || len(iso) != 2 {
		return ""
	}
	return iso
}
