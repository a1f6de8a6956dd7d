package api

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// hangUps watches the connections of detached holds for their clients hanging up, for the
// whole process with one epoll instance and one goroutine, where a goroutine blocked in a
// read per connection would cost a stack each. It is made on the first detached hold.
var hangUps = sync.OnceValues(newHangUpWatch)

type hangUpWatch struct {
	epfd int

	mu    sync.Mutex
	seq   int32 // tells apart registrations of a descriptor number that was reused
	byKey map[hangUpKey]func()
}

type hangUpKey struct{ fd, seq int32 }

func newHangUpWatch() (*hangUpWatch, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &hangUpWatch{epfd: epfd, byKey: map[hangUpKey]func(){}}
	go w.run()
	return w, nil
}

func (w *hangUpWatch) run() {
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return // cannot happen with a valid descriptor; holds still end by their timers
		}
		for _, ev := range events[:n] {
			key := hangUpKey{ev.Fd, ev.Pad}
			w.mu.Lock()
			onHangUp := w.byKey[key]
			delete(w.byKey, key)
			w.mu.Unlock()
			if onHangUp != nil {
				go onHangUp()
			}
		}
	}
}

// watchHangUp calls onHangUp, once and on a goroutine of its own, if the client of conn
// closes or resets the connection before stop is called; stop must be called before conn
// is closed or handed on. It reports false when conn cannot be watched this way. Data the
// client sends meanwhile (its next request) stays unread in the socket.
func watchHangUp(conn net.Conn, onHangUp func()) (stop func(), ok bool) {
	w, err := hangUps()
	if err != nil {
		return nil, false
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	var key hangUpKey
	var addErr error
	err = raw.Control(func(fd uintptr) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seq++
		key = hangUpKey{int32(fd), w.seq}
		w.byKey[key] = onHangUp
		ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: key.fd, Pad: key.seq}
		if addErr = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev); addErr != nil {
			delete(w.byKey, key)
		}
	})
	if err != nil || addErr != nil {
		return nil, false
	}
	return func() {
		w.mu.Lock()
		delete(w.byKey, key)
		w.mu.Unlock()
		_ = raw.Control(func(fd uintptr) { _ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
	}, true
}
