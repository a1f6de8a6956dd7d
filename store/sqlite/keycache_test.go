package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/job"
)

// TestKeyRevokedElsewhereIsRefusedAtOnce: a server that has the key cached, and a second
// opening of the same file (what chaperone keys revoke is, in another process) that revokes
// it. The server's very next lookup refuses the key; a key created elsewhere is found at once.
func TestKeyRevokedElsewhereIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chaperone.db")
	server := openAt(t, path)
	if server.keys.changes == nil {
		t.Fatal("no change detector on a WAL database: every lookup would read the key epoch")
	}
	admin := openAt(t, path)

	_, laptop := apikey.New("laptop", time.Now())
	if err := admin.CreateKey(ctx, laptop); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the first lookup fills the cache, the others are answered from it
		if _, err := server.KeyByHash(ctx, laptop.Hash); err != nil {
			t.Fatalf("KeyByHash of a key created elsewhere: %v", err)
		}
	}
	// Unrelated writes by the server itself must not hide the revocation.
	if err := server.RemoveWorker(ctx, "nobody"); err != nil {
		t.Fatal(err)
	}
	if err := admin.RevokeKey(ctx, "laptop", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := server.KeyByHash(ctx, laptop.Hash); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("KeyByHash right after a revocation elsewhere: error = %v, want ErrNotFound", err)
	}
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
