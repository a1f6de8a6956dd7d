//go:build !linux

package api

import "net"

// watchHangUp has no way to watch a connection without a read of its own here; the hold
// then reads from it (see readForHangUp).
func watchHangUp(net.Conn, func()) (stop func(), ok bool) { return nil, false }
