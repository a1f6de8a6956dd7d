package main

import (
	"strings"
	"testing"
)

func TestMSAServerFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://api.colabfold.com":     "https://api.colabfold.com",
		"http://mmseqs.lab.internal:8/": "http://mmseqs.lab.internal:8",
	} {
		if got, err := msaServerURL(in); err != nil || got != want {
			t.Errorf("msaServerURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "api.colabfold.com", "ftp://x", "https://"} {
		if _, err := msaServerURL(bad); err == nil {
			t.Errorf("msaServerURL(%q) accepted", bad)
		}
	}
	code, _, errOut := chaperone(t, "serve", "--msa-server", "colabfold", "--no-worker")
	if code != 2 || !strings.Contains(errOut, "--msa-server: want the http or https URL") {
		t.Errorf("serve with a bad --msa-server: exit %d, %s", code, errOut)
	}
}
