package api

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestClientGroup(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"203.0.113.7":                "203.0.113.7",
		"::ffff:203.0.113.7":         "203.0.113.7",
		"2001:db8:1:2:aaaa::1":       "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff::99": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":            "2001:db8:1:3::/64",
	} {
		if got := clientGroup(netip.MustParseAddr(in)); got != want {
			t.Errorf("%s: group %s, want %s", in, got, want)
		}
	}
}

func TestConnectionsPerClientAreBounded(t *testing.T) {
	t.Parallel()
	hs := newHoldServerWith(t, false, func(c *Config) { c.Catalog.Limits.ConnectionsPerClient = 2 })
	addr := strings.TrimPrefix(hs.url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	health := func(c net.Conn) *http.Response {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET /v1/health HTTP/1.1\r\nHost: h\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	first, second := dial(), dial()
	health(first)
	health(second)
	third := dial()
	third.SetDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a third connection: %v %v", res, err)
	}
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for { // the server notices the close when it next reads from the connection
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("GET /v1/health HTTP/1.1\r\nHost: h\r\n\r\n"))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a connection after one closed: %v %v", res, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHeldWaitsPerClientAreBounded(t *testing.T) {
	t.Parallel()
	hs := newHoldServerWith(t, false, func(c *Config) { c.Catalog.Limits.HeldWaitsPerClient = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := hs.get(ctx, &http.Client{}, "wait=30")
	hs.untilHeld(1)
	r := <-hs.get(ctx, &http.Client{}, "wait=30")
	if r.err != nil || r.res.StatusCode != http.StatusOK || r.res.Header.Get("Preference-Applied") != "" || r.status != "running" {
		t.Fatalf("a second wait of the same client: %+v", r)
	}
	hs.succeed()
	if r := <-held; r.err != nil || r.status != "succeeded" {
		t.Fatalf("the held wait: %+v", r)
	}
	hs.untilHeld(0)
	if _, ok := hs.srv.held.take("127.0.0.1"); !ok {
		t.Error("the ended hold did not give back its count")
	}
}
