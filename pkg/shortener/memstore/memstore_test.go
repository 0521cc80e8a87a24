package memstore_test

import (
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) shortener.Store { return memstore.New() })
}
