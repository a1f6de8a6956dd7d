package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

func jobWith(status, stage string, progress any, done int) func(http.ResponseWriter, *http.Request) {
	var m map[string]any
	if err := json.Unmarshal([]byte(jobJSON), &m); err != nil {
		panic(err)
	}
	m["status"], m["done"], m["progress"] = status, done, progress
	if stage != "" {
		m["stage"] = stage
	}
	b, _ := json.Marshal(m)
	return jobReply(200, string(b))
}

func TestWaitReportsEachChangeAndReturnsTheTerminalJob(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		jobWith("queued", "", nil, 0),
		jobWith("running", "inference", nil, 0),
		jobWith("running", "inference", nil, 0), // no change: no call
		jobWith("running", "inference", 0.5, 0),
		jobWith("succeeded", "writing", 1.0, 1),
	)
	c, slept := testClient(t, f.URL, Retry{})
	var seen []string
	j, err := c.Wait(t.Context(), "0123456789abcdef0123456789abcdef", func(j *Job) {
		p := "-"
		if j.Progress != nil {
			p = fmt.Sprint(*j.Progress)
		}
		seen = append(seen, fmt.Sprintf("%s/%s/%s", j.Status, j.Stage, p))
	})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != Succeeded || j.Done != 1 {
		t.Errorf("Wait returned %+v", j)
	}
	want := []string{"queued//-", "running/inference/-", "running/inference/0.5", "succeeded/writing/1"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("callback saw %q, want %q: first sight and each change", seen, want)
	}
	for i, r := range f.got() {
		want := "wait=1"
		if i == 0 {
			want = "" // the first look answers at once
		}
		if r.Header.Get("Prefer") != want {
			t.Errorf("request %d: Prefer %q, want %q while watching progress", i+1, r.Header.Get("Prefer"), want)
		}
	}
	// The fake answers held polls at once; Wait paces itself rather than spin.
	if len(*slept) != 3 {
		t.Errorf("slept %v; want a pause after each of the 3 early answers to a hold", *slept)
	}
}

func TestWaitWithoutCallbackHoldsLong(t *testing.T) {
	t.Parallel()
	f := newFake(t, jobWith("running", "msa", nil, 0), jobWith("failed", "msa", nil, 0))
	c, _ := testClient(t, f.URL, Retry{})
	j, err := c.Wait(t.Context(), "0123456789abcdef0123456789abcdef", nil)
	if err != nil || j.Status != Failed {
		t.Fatalf("Wait = %+v, %v; a failed job is a result, not an error", j, err)
	}
	if p := f.got()[1].Header.Get("Prefer"); p != "wait=30" {
		t.Errorf("Prefer %q, want wait=30", p)
	}
}

func TestFollowLogsReadsOnlyNewBytesUntilTheEnd(t *testing.T) {
	t.Parallel()
	log := func(rangeWant, body string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Range") != rangeWant {
				t.Errorf("log read with Range %q, want %q", r.Header.Get("Range"), rangeWant)
			}
			if body == "" {
				problemReply(416, "range-not-satisfiable")(w, r)
				return
			}
			w.WriteHeader(map[bool]int{true: 200, false: 206}[rangeWant == ""])
			w.Write([]byte(body))
		}
	}
	f := newFake(t,
		jobWith("running", "inference", nil, 0),
		log("", "one\n"),
		jobWith("running", "inference", nil, 0),
		log("bytes=4-", ""),
		jobWith("succeeded", "writing", 1.0, 1),
		log("bytes=4-", "two\n"),
	)
	c, _ := testClient(t, f.URL, Retry{})
	var out bytes.Buffer
	j, err := c.FollowLogs(t.Context(), "0123456789abcdef0123456789abcdef", &out)
	if err != nil || j.Status != Succeeded {
		t.Fatalf("FollowLogs = %+v, %v", j, err)
	}
	if out.String() != "one\ntwo\n" {
		t.Errorf("followed %q", out.String())
	}
}
