package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Targets. Throughput is a share of its anchor, measured in the same run.
const (
	targetCreates = 0.30 // durable creates, of the raw SQLite commit loop
	targetGets    = 0.50 // GET /v1/jobs/{id}, of the bare JSON handler
	targetPickup  = 20 * time.Millisecond
	targetWaiters = 100.0 // MB of server RSS that the held long-polls add, at most
)

// printSetup says what the run measures on, and how the servers are set up: the machine,
// the limits raised for the benchmark and the servers' log level.
func printSetup(out io.Writer, o options) {
	fmt.Fprintf(out, "chaperone bench: %s/%s, %d CPUs, %s, load average %s at start; server in a child process, clients here, HTTP/1.1 keep-alive on loopback\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), loadAverage())
	fmt.Fprint(out, wrap(fmt.Sprintf("Limits raised for the benchmark, so that it measures the server and not "+
		"its quotas: active_jobs_per_owner, creates_per_owner_per_minute, queued_jobs and retained_jobs "+
		"(defaults 16, 60, 1000, 1000), and connections_per_client and held_waits_per_client (64, 16: "+
		"all the load comes from this one address, as through a proxy that does not forward clients) "+
		"are all %d. Every quota check still runs on every create and every connection. "+
		"The servers log at %s level, as chaperone serve does by default, into a file.", benchLimit, o.logLevel), 100, ""))
	fmt.Fprintln(out)
}

// report prints the table of the four figures against their targets, then how each was
// measured.
func report(out io.Writer, o options, r results) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(cols ...any) {
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	verdict := func(ok bool) string {
		if ok {
			return "OK"
		}
		return "MISS"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	lat := func(sorted []time.Duration) string {
		return fmt.Sprintf("p50 %s, p99 %s", ms(percentile(sorted, 50)), ms(percentile(sorted, 99)))
	}
	cores := func(t throughput) string {
		return fmt.Sprintf("server %.2f cores, clients %.2f cores", t.ServerCPU.Seconds()/t.Window.Seconds(), t.ClientCPU.Seconds()/t.Window.Seconds())
	}
	ratio := func(measured, anchor float64) float64 {
		if anchor == 0 {
			return 0
		}
		return measured / anchor
	}
	share := func(measured, anchor throughput) string {
		return fmt.Sprintf("%.0f /s / %.0f /s = %.2f", measured.Rate(), anchor.Rate(), ratio(measured.Rate(), anchor.Rate()))
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	w := r.waiters
	heap := goMem(w.During) - goMem(w.Before)
	rss := int64(w.During.RSS) - int64(w.Before.RSS)
	pickupOK := func(sorted []time.Duration) string { return verdict(percentile(sorted, 50) < targetPickup) }

	row("#", "figure", "measured / anchor = ratio", "target", "result")
	row("1", "durable creates (POST /v1/predictions → 202)", share(r.creates, r.commits),
		fmt.Sprintf("≥ %.2f", targetCreates), verdict(ratio(r.creates.Rate(), r.commits.Rate()) >= targetCreates))
	row("", "  anchor: raw SQLite commit loop, synchronous="+r.synchronous, "", "", "")
	row("", "  latency", lat(r.creates.Latencies), "", "")
	row("2", "GET /v1/jobs/{id} (→ 200)", share(r.gets, r.bare),
		fmt.Sprintf("≥ %.2f", targetGets), verdict(ratio(r.gets.Rate(), r.bare.Rate()) >= targetGets))
	row("", "  anchor: bare Go JSON handler, same clients", "", "", "")
	row("", "  latency", lat(r.gets.Latencies)+" (bare: "+lat(r.bare.Latencies)+")", "", "")
	row("3", "pickup, server: started_at − created_at", lat(r.pickup.Server), "p50 < "+ms(targetPickup), pickupOK(r.pickup.Server))
	row("", "  client: send → a GET shows it running", lat(r.pickup.Seen), "p50 < "+ms(targetPickup), pickupOK(r.pickup.Seen))
	row("", "  client: send → long-poll shows it succeeded", lat(r.pickup.Done), "", "")
	row("4", fmt.Sprintf("server RSS added by %d held waits", w.N), fmt.Sprintf("%.1f MB", mb(rss)),
		fmt.Sprintf("≤ %.0f MB", targetWaiters), verdict(mb(rss) <= targetWaiters))
	row("", "  same, Go heap+stack", fmt.Sprintf("%.1f MB", mb(heap)),
		fmt.Sprintf("≤ %.0f MB", targetWaiters), verdict(mb(heap) <= targetWaiters))
	tw.Flush()

	fmt.Fprintf(out, "\nHow each figure was measured:\n")
	note := func(n int, format string, args ...any) {
		fmt.Fprint(out, wrap(fmt.Sprintf("%d. ", n)+fmt.Sprintf(format, args...), 100, "   "))
	}
	fmt.Fprint(out, wrap(fmt.Sprintf("Each throughput phase runs in %d rounds of %s, each followed by a round of its anchor, "+
		"so that both see the same machine while other work on it comes and goes; the first round of each has "+
		"%s of warm-up, later ones %s.", o.rounds, o.duration/time.Duration(o.rounds), o.warmup, min(o.warmup, roundWarmup)), 100, ""))
	note(1, "%d clients in a closed loop (each sends its next request when its last is answered), "+
		"%s measured in all, each request with the API key of one of %d owners at random. "+
		"Each 202 is a committed SQLite transaction of the store that runs every quota check. The worker's "+
		"only slot is busy with a job that never ends, so the jobs stay queued (about %d per owner at the "+
		"end). %d answered, %d failed; %s.%s The anchor: one connection of this process inserting one row "+
		"of %d bytes (a job row's mean size) per transaction and committing it, back to back, "+
		"into a SQLite file in WAL mode next to the store's, with synchronous=%s; %d commits, latency %s.",
		o.clients, o.duration, o.owners, r.jobsHeld/o.owners, r.creates.N, r.creates.Errors, cores(r.creates), errNote(r.creates),
		r.rowBytes, r.synchronous, r.commits.N, lat(r.commits.Latencies))
	note(2, "The same clients, each GET a random job of a random owner (with that owner's key) among the "+
		"%d jobs the store then holds; each request checks the key and reads the row. %d answered, %d failed; %s.%s "+
		"The anchor: a net/http server in a child process of its own that answers the same requests (same "+
		"clients, ids and keys) by encoding a job view of the same fields and values from a struct, after "+
		"checking only that a bearer key is present. %d answered, %d failed; %s.%s",
		r.jobsHeld, r.gets.N, r.gets.Errors, cores(r.gets), errNote(r.gets), r.bare.N, r.bare.Errors, cores(r.bare), errNote(r.bare))
	note(3, "%d \"ok\" jobs (the stand-in tool: one shell process) submitted one at a time, %s apart, "+
		"to a second server whose one-slot worker is idle. The first line is the server's own view, "+
		"both stamps taken by the server and stored to the millisecond (so 0 means under 1 ms): "+
		"from the API accepting the job to the worker leasing it. The second is what a client sees: "+
		"from sending the create until a GET (polled back to back, no hold) shows it running or later; "+
		"it includes the create's round trip and one poll's. The third: until a Prefer: wait "+
		"long-poll, sent once it ran, answers with it succeeded (the tool ran and the job completed).",
		len(r.pickup.Server), o.gap)
	note(4, "%d connections, each holding GET /v1/jobs/{id} with Prefer: wait=60 on the running job "+
		"that never ends. The server process reports its own memory, after two full GCs, the second "+
		"returning free memory to the OS (debug.FreeOSMemory), before the long-polls and while they are held: "+
		"RSS is VmRSS (%.1f MB before, %.1f MB while held); heap+stack is HeapInuse+StackInuse (here %+.1f MB heap, "+
		"%+.1f MB stacks); the clients are another process and are not counted. This runs first on its server, "+
		"before the creates fill SQLite's page caches (memory outside Go's heap). Server goroutines %d → %d; "+
		"while held, the server used %.1f%% of one core over %s; %d long-polls ended early.%s Once released: "+
		"heap+stack %+.1f MB and RSS %+.1f MB against before. Open-files limit %d.",
		w.N, mb(int64(w.Before.RSS)), mb(int64(w.During.RSS)),
		mb(int64(w.During.HeapInuse)-int64(w.Before.HeapInuse)), mb(int64(w.During.StackInuse)-int64(w.Before.StackInuse)),
		w.Before.Goroutines, w.During.Goroutines, 100*w.CPU.Seconds()/w.Hold.Seconds(), w.Hold,
		w.Early, earlyNote(w), mb(goMem(w.After)-goMem(w.Before)), mb(int64(w.After.RSS)-int64(w.Before.RSS)), r.fdLimit)
}

// wrap breaks text into lines of at most width, indenting every line after the first.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len([]rune(word)) > width {
			b.WriteString("\n" + indent)
			line = len(indent)
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len([]rune(word))
	}
	return b.String() + "\n"
}

// goMem is the memory the Go runtime holds for the heap and goroutine stacks.
func goMem(s serverStats) int64 { return int64(s.HeapInuse + s.StackInuse) }

func errNote(t throughput) string {
	if t.FirstErr == nil {
		return ""
	}
	return fmt.Sprintf(" First error: %v.", t.FirstErr)
}

func earlyNote(w waiters) string {
	if w.FirstErr == nil {
		return ""
	}
	return fmt.Sprintf(" First: %v.", w.FirstErr)
}
