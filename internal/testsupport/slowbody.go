package testsupport

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// SlowBody sends request, the head of an HTTP/1.1 request and the part
// of its body that is ever sent (fewer bytes than its Content-Length
// announces), to addr over a connection of its own, and returns the
// server's answer and its body: a client that stalls in the middle of its
// body, for the server's read timeout to answer. It waits at most 10 s
// for the answer.
func SlowBody(t testing.TB, addr, request string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}
