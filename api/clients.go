package api

import (
	"net/netip"
	"sync"
)

// clientGroup is the key a client's bounds (the limits connections_per_client, over which a
// connection is refused with a 429, and held_waits_per_client, over which a wait is
// answered at once) and, for keyless callers, its jobs are kept under: the address itself
// for IPv4, its /64 for IPv6, the block one subscriber usually holds, so that rotating
// through its own addresses buys it nothing.
func clientGroup(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}

// clientCounts counts what each client holds (connections, held waits) against a bound.
type clientCounts struct {
	limit int
	mu    sync.Mutex
	n     map[string]int
}

func newClientCounts(limit int) *clientCounts {
	return &clientCounts{limit: limit, n: map[string]int{}}
}

// take counts one more for client and returns its release, or false when the client is at
// the bound.
func (c *clientCounts) take(client string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[client] >= c.limit {
		return nil, false
	}
	c.n[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.n[client]--; c.n[client] == 0 {
				delete(c.n, client)
			}
		})
	}, true
}
