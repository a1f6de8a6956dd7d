package pydriver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
)

// frame is one frame as driver.py writes it.
func frame(header string, payload ...float32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(len(header)))
	b.WriteString(header)
	binary.Write(&b, binary.LittleEndian, payload)
	return b.Bytes()
}

func TestReadEvent(t *testing.T) {
	t.Parallel()
	ev, err := readEvent(bytes.NewReader(frame(`{"event": "embedding", "index": 2, "length": 1, "d_model": 2, "bytes": 12, "resident": ["esmc-300m"], "loads": 1}`, 0.5, -1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ev.floats(1, 2)
	if ev.Event != "embedding" || ev.Index != 2 || fmt.Sprint(ev.Resident) != "[esmc-300m]" || err != nil || fmt.Sprint(got) != "[-1 2]" {
		t.Errorf("event %+v, floats %v (%v)", ev, got, err)
	}
	if _, err := ev.floats(2, 2); err == nil {
		t.Error("floats past the payload: no error")
	}
	ev, err = readEvent(bytes.NewReader(frame(`{"event": "structure", "ptm": NaN, "plddt": 0.5}`)))
	if err != nil || ev.PTM != nil || *ev.PLDDT != 0.5 {
		t.Errorf("Python's NaN: %+v, %v; want a nil ptm", ev, err)
	}

	for _, tc := range []struct {
		name  string
		input []byte
		want  string
	}{
		{"a clean end between frames", nil, "EOF"},
		{"an end inside the length", []byte{0, 0}, "ended inside a frame"},
		{"an end inside the header", frame(`{"event": "done"}`)[:8], "ended inside a frame"},
		{"an end inside the payload", frame(`{"event": "embedding", "bytes": 8}`, 1), "ended inside a payload"},
		{"stray text on stdout", []byte("Downloading weights...\n"), "something other than a frame"},
		{"a header that is not JSON", frame(`event: done`), "not JSON"},
		{"a negative payload", frame(`{"event": "done", "bytes": -1}`), "announced a payload of -1 bytes"},
	} {
		_, err := readEvent(bytes.NewReader(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.name, err, tc.want)
		}
		if tc.want == "EOF" && err != io.EOF {
			t.Errorf("%s: %v; want io.EOF", tc.name, err)
		}
	}
}

func TestBucketsGroupSequencesOfLikeLength(t *testing.T) {
	t.Parallel()
	of := func(lengths ...int) []job.NamedSequence {
		seqs := make([]job.NamedSequence, len(lengths))
		for i, n := range lengths {
			seqs[i].Sequence = strings.Repeat("A", n)
		}
		return seqs
	}
	tests := []struct {
		name    string
		lengths []int
		want    string
	}{
		{"one sequence", []int{10}, "[[0]]"},
		{"like lengths share a pass, longest first", []int{90, 100, 80}, "[[1 0 2]]"},
		{"a quarter shorter starts a bucket", []int{100, 74, 75}, "[[0 2] [1]]"},
		{"a bucket holds at most the token budget", []int{2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000},
			"[[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] [16]]"},
		{"three length classes", []int{100, 300, 600, 110, 310, 610}, "[[5 2] [4 1] [3 0]]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(buckets(of(tt.lengths...))); got != tt.want {
			t.Errorf("%s: buckets %s; want %s", tt.name, got, tt.want)
		}
	}
}
