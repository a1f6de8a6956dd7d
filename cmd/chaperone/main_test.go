package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// chaperone runs the command in-process and returns its exit code and output.
func chaperone(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestKeysCreateListRevoke(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := chaperone(t, "keys", "create", "--name", "ci", "--data", dir)
	if code != 0 {
		t.Fatalf("keys create exited %d: %s", code, errOut)
	}
	key := strings.TrimSpace(out)
	if !apikey.WellFormed(key) {
		t.Fatalf("keys create printed %q, not a key", key)
	}

	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "chaperone.db"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.KeyByHash(context.Background(), apikey.Hash(key))
	st.Close()
	if err != nil || rec.Name != "ci" {
		t.Fatalf("the printed key is not stored under its hash: %v %+v", err, rec)
	}

	_, list, _ := chaperone(t, "keys", "list", "--data", dir)
	if !strings.Contains(list, rec.ID) || !strings.Contains(list, "ci") || strings.Contains(list, key) {
		t.Fatalf("keys list shows %q; want the id and name, never the key", list)
	}
	if code, _, errOut := chaperone(t, "keys", "revoke", "ci", "--data", dir); code != 0 {
		t.Fatalf("keys revoke by name exited %d: %s", code, errOut)
	}
	st, err = sqlite.Open(context.Background(), filepath.Join(dir, "chaperone.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.KeyByHash(context.Background(), apikey.Hash(key))
	st.Close()
	if err == nil {
		t.Fatal("a revoked key is still accepted")
	}
	_, list, _ = chaperone(t, "keys", "list", "--data", dir)
	if strings.HasSuffix(strings.TrimSpace(list), "-") {
		t.Fatalf("keys list does not show the revocation: %s", list)
	}
	if code, _, _ := chaperone(t, "keys", "revoke", "nobody", "--data", dir); code != 1 {
		t.Fatalf("revoking an unknown key exited %d, want 1", code)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"keys"},
		{"keys", "create"},
		{"keys", "rotate"},
		{"serve", "--limit", "queued_jobs=many"},
		{"serve", "--limit", "no_such_limit=3"},
		{"serve", "--tool", "boltz"},
		{"serve", "--trusted-proxy", "not-a-cidr"},
		{"serve", "--upload-staging-per-job", "lots"},
		{"serve", "--upload-staging-per-worker", "0"},
		{"jobs"},
		{"jobs", "frobnicate"},
		{"jobs", "get"},
		{"jobs", "get", "a", "b"},
		{"jobs", "list", "--limit", "many"},
		{"predict"},
		{"predict", "--sequence", "MK", "--input", "x.fasta"},
		{"predict", "--sequence", "MK", "--param", "fast"},
		{"predict", "--input", "/nonexistent/x.fasta"},
		{"design", "--spec", "x.yaml"},
		{"design", "--protocol", "protein-anything"},
		{"embed"},
		{"models", "extra"},
		{"models", "--server", "localhost:8080"},
		{"models", "--retries", "-1"},
	} {
		if code, _, _ := chaperone(t, args...); code != 2 {
			t.Errorf("chaperone %v exited %d, want 2", args, code)
		}
	}
}

func TestParamValuesAreJSONWhenTheyParse(t *testing.T) {
	params := map[string]any{}
	for _, kv := range []string{"a=3", "b=false", "c=pdb", "d=0.5", `e="x y"`, "f=[1,2]", "g=", "h=a=b"} {
		if err := parseParam(params, kv); err != nil {
			t.Fatalf("parseParam(%q): %v", kv, err)
		}
	}
	want := map[string]any{"a": 3.0, "b": false, "c": "pdb", "d": 0.5, "e": "x y", "f": []any{1.0, 2.0}, "g": "", "h": "a=b"}
	if !reflect.DeepEqual(params, want) {
		t.Errorf("params = %v, want %v", params, want)
	}
	for _, bad := range []string{"fast", "=3"} {
		if err := parseParam(params, bad); err == nil {
			t.Errorf("parseParam(%q) succeeded", bad)
		}
	}
}

// TestAKeyRevokedByTheKeysCommandIsRefusedOnTheNextRequest: a running server has the key
// cached from earlier requests; "keys revoke", which opens the database on its own as
// another process would, revokes it; the server's very next request with it is a 401.
func TestAKeyRevokedByTheKeysCommandIsRefusedOnTheNextRequest(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	stores, err := app.OpenStores(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(ctx, app.Config{Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: "127.0.0.1:0",
		DataDir: dir, NoWorker: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); stores.Close() })

	code, out, errOut := chaperone(t, "keys", "create", "--name", "laptop", "--data", dir)
	if code != 0 {
		t.Fatalf("keys create exited %d: %s", code, errOut)
	}
	key := strings.TrimSpace(out)
	list := func() int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, a.URL+"/v1/jobs", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for range 3 {
		if got := list(); got != http.StatusOK {
			t.Fatalf("GET /v1/jobs with a live key = %d, want 200", got)
		}
	}
	if code, _, errOut := chaperone(t, "keys", "revoke", "laptop", "--data", dir); code != 0 {
		t.Fatalf("keys revoke exited %d: %s", code, errOut)
	}
	if got := list(); got != http.StatusUnauthorized {
		t.Errorf("GET /v1/jobs right after keys revoke = %d, want 401", got)
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1000", 1000}, {"4GiB", 4 << 30}, {"500MB", 500e6}, {"2 TiB", 2 << 40}, {"1KB", 1000}, {"7B", 7},
		{"", 0}, {"0", 0}, {"-1GiB", 0}, {"lots", 0}, {"1.5GB", 0}, {"9000000000TiB", 0},
	} {
		got, err := parseBytes(tc.in)
		if got != tc.want || (err == nil) != (tc.want > 0) {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
