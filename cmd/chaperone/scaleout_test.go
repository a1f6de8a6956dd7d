package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/store/postgres"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestKeysOnPostgres: keys take --store, and CHAPERONE_STORE, as serve does.
func TestKeysOnPostgres(t *testing.T) {
	url := pgtest.Database(t)
	code, out, errOut := chaperone(t, "keys", "create", "--name", "ci", "--store", url, "--data", t.TempDir())
	if code != 0 {
		t.Fatalf("keys create exited %d: %s", code, errOut)
	}
	key := strings.TrimSpace(out)
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rec, err := st.KeyByHash(context.Background(), apikey.Hash(key)); err != nil || rec.Name != "ci" {
		t.Fatalf("the printed key is not in the database: %v %+v", err, rec)
	}

	t.Setenv("CHAPERONE_STORE", url)
	if code, _, errOut := chaperone(t, "keys", "revoke", "ci"); code != 0 {
		t.Fatalf("keys revoke with CHAPERONE_STORE exited %d: %s", code, errOut)
	}
	if _, err := st.KeyByHash(context.Background(), apikey.Hash(key)); err == nil {
		t.Fatal("a key revoked through CHAPERONE_STORE is still accepted")
	}
}
