package server

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// synDrop is a classic BPF socket filter for a TCP listener: it drops a
// segment with SYN set and ACK clear (a new connection) and keeps every
// other (the final ACK of a handshake under way). A socket filter sees the
// segment from its TCP header: byte 13 holds the flags.
var synDrop = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 13},
	{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: 0x12}, // SYN|ACK
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0x02, Jt: 0, Jf: 1},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},          // a SYN alone: drop
	{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff}, // keep
}

// errNoSocket: the listener gives no access to its socket.
var errNoSocket = errors.New("the listener has no socket to drain")

// takeBacklog stops new connections to l (steps 1 and 2 of
// drainListener) and returns the connections the kernel had accepted.
// After it, l no longer listens; l.Close still releases it.
func takeBacklog(l net.Listener) ([]net.Conn, error) {
	sc, ok := l.(syscall.Conn)
	if !ok {
		return nil, errNoSocket
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	if _, tcp := l.Addr().(*net.TCPAddr); tcp && attachSYNDrop(rc) {
		time.Sleep(handshakeGrace)
	}
	var fds []int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if err == unix.EINTR || err == unix.ECONNABORTED {
				continue
			}
			if err != nil {
				break // EAGAIN: the backlog is empty
			}
			fds = append(fds, nfd)
		}
		// At once, so that no handshake completes in between: a listening
		// socket shut down for reading stops listening.
		serr = unix.Shutdown(int(fd), unix.SHUT_RD)
	}); err != nil {
		return nil, err
	}
	conns := make([]net.Conn, 0, len(fds))
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "accepted")
		c, err := net.FileConn(f)
		_ = f.Close()
		if err == nil {
			conns = append(conns, c)
		}
	}
	return conns, serr
}

// attachSYNDrop attaches synDrop to the TCP listener of rc, and reports
// whether the kernel took it.
func attachSYNDrop(rc syscall.RawConn) bool {
	var ok bool
	_ = rc.Control(func(fd uintptr) {
		prog := unix.SockFprog{Len: uint16(len(synDrop)), Filter: &synDrop[0]}
		ok = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog) == nil
	})
	return ok
}
