//go:build !linux

package server

import (
	"errors"
	"net"
	"syscall"
)

// takeBacklog is Linux only (drainlistener_linux.go): elsewhere the
// listener closes at once.
func takeBacklog(net.Listener) ([]net.Conn, error) {
	return nil, errors.ErrUnsupported
}

// attachSYNDrop is Linux only.
func attachSYNDrop(syscall.RawConn) bool { return false }
