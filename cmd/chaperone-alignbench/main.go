// Command chaperone-alignbench measures what the alignment stage (package aligner) buys:
// how long GPU slots sit idle because of alignment searches, and how often a chain is
// searched, with the searches made by the tools inside their jobs (as before the stage)
// and by the stage ahead of the workers (as now).
//
// Each scenario runs a deployment on this machine: a PostgreSQL cluster started for the
// run, two serve replicas (in this process, without in-process workers) sharing it and an
// artifact folder, two remote workers (in this process, over HTTP with a worker token,
// one per replica) of one slot each, whose engine stands in for a tool of a fixed compute
// time, and a stand-in ColabFold server (align/aligntest) that answers a ticket a set
// delay after it was submitted. Jobs are predictions of proteins, each protein sent in
// several jobs, created at once and spread over the replicas.
//
// It prints, per search delay and way of searching: the slots' idle time between
// consecutive jobs (p50, p95), the time tools waited on the alignment server inside their
// jobs, the searches per distinct chain, and the wall time against the least it could be
// (one search, then the compute spread over the slots). Then a screen of one protein with
// many ligands gives the cache's hit rate.
//
// Run it with "make bench-align". It is a benchmark harness, never a server a user runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
)

type options struct {
	delays   []time.Duration
	compute  time.Duration
	proteins int
	copies   int
	screen   int
	poll     time.Duration
}

func main() {
	o := options{}
	delays := flag.String("delays", "4s,30s", "search delays of the stand-in server, comma-separated")
	flag.DurationVar(&o.compute, "compute", 2*time.Second, "compute time of one job on a slot")
	flag.IntVar(&o.proteins, "proteins", 8, "distinct proteins")
	flag.IntVar(&o.copies, "copies", 2, "jobs per protein")
	flag.IntVar(&o.screen, "screen", 100, "jobs of the one-protein screen (one ligand each)")
	flag.DurationVar(&o.poll, "poll", time.Second, "how often a search polls its ticket, in either way of searching")
	flag.Parse()
	for _, s := range strings.Split(*delays, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintf(os.Stderr, "-delays: %v\n", err)
			os.Exit(2)
		}
		o.delays = append(o.delays, d)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "chaperone-alignbench: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	cluster, err := pgtest.StartDurable()
	if err != nil {
		return fmt.Errorf("PostgreSQL (Debian: apt-get install postgresql): %w", err)
	}
	defer cluster.Stop()
	ctx := context.Background()
	fmt.Printf("%d jobs: %d proteins × %d, created at once; %s of compute each; 2 replicas, 2 workers of 1 slot; tickets polled every %s\n\n",
		o.proteins*o.copies, o.proteins, o.copies, o.compute, o.poll)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "search delay\tsearched by\tidle p50\tidle p95\ttools waited\tsearches/chain\twall\tleast wall\t")
	n := 0
	for _, delay := range o.delays {
		for _, inTool := range []bool{true, false} {
			n++
			f, err := scenario(ctx, cluster, fmt.Sprintf("s%d", n), o, delay, inTool, o.proteins, o.copies, false)
			if err != nil {
				return err
			}
			by := "the stage"
			if inTool {
				by = "the tools"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t\n", delay, by, sec(percentile(f.idle, 50)), sec(percentile(f.idle, 95)),
				sec(f.toolWait), f.searchesPerChain, sec(f.wall), sec(f.leastWall))
		}
	}
	tw.Flush()
	if o.screen > 0 {
		n++
		f, err := scenario(ctx, cluster, fmt.Sprintf("s%d", n), options{compute: 100 * time.Millisecond, poll: o.poll}, o.delays[0], false, 1, o.screen, true)
		if err != nil {
			return err
		}
		fmt.Printf("\nscreen: %d jobs of one protein, each with its own ligand, searched by the stage (delay %s): %d search(es), cache hit rate %.0f%% (%d of %d jobs found their alignments searched), wall %s\n",
			o.screen, o.delays[0], f.searches, 100*float64(o.screen-f.searches)/float64(o.screen), o.screen-f.searches, o.screen, sec(f.wall))
	}
	return nil
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// percentile of sorted durations (nearest rank); 0 for none.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[min(max(i, 1), len(sorted))-1]
}
