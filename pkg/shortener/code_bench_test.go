package shortener

import (
	"crypto/rand"
	"testing"
)

// BenchmarkRandomCode measures the generation of one 7-character code from
// crypto/rand.
func BenchmarkRandomCode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := randomCode(rand.Reader, DefaultCodeLength); err != nil {
			b.Fatal(err)
		}
	}
}
