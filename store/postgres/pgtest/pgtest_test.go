package pgtest

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestDatabase(t *testing.T) {
	urls := map[string]bool{}
	for range 2 {
		url := Database(t)
		if urls[url] {
			t.Fatalf("Database returned %s twice", url)
		}
		urls[url] = true
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("a new database has %d tables, want none", n)
		}
		conn.Close(t.Context())
	}
}
