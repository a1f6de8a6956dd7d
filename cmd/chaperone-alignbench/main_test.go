package main

import (
	"context"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
)

// The bench measures what it says: with the stage, every chain is searched once and no
// tool waits on the server; with the tools searching, each waits inside its job, and a
// chain that two workers meet is searched twice. (Its timings are the bench's to print,
// not this test's to hold.)
func TestTheBenchTellsTheWaysOfSearchingApart(t *testing.T) {
	cluster, err := pgtest.StartDurable()
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	defer cluster.Stop()
	o := options{compute: 50 * time.Millisecond, poll: 20 * time.Millisecond}
	stage, err := scenario(context.Background(), cluster, "t1", o, 200*time.Millisecond, false, 3, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if stage.searchesPerChain != 1 || stage.toolWait != 0 {
		t.Errorf("searched by the stage: %.2f searches a chain, tools waited %s; want 1 and none", stage.searchesPerChain, stage.toolWait)
	}
	tools, err := scenario(context.Background(), cluster, "t2", o, 200*time.Millisecond, true, 3, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if tools.searches < 3 || tools.toolWait < 3*200*time.Millisecond {
		t.Errorf("searched by the tools: %d searches, tools waited %s; want every chain searched inside a job", tools.searches, tools.toolWait)
	}
}
