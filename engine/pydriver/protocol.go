package pydriver

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// The wire format between the Go side and driver.py, both directions: a 4-byte big-endian
// length, that many bytes of a JSON header, then the header's "bytes" bytes of payload:
// little-endian float32 arrays end to end. driver.py's docstring lists the requests and
// events.

// maxHeader bounds a header, so that a driver printing stray bytes to its stdout is a clear
// protocol error rather than an allocation of gigabytes.
const maxHeader = 64 << 20

// event is one frame the driver sent: its header fields and its payload.
type event struct {
	Event string `json:"event"`
	Bytes int64  `json:"bytes"`

	// ready
	Package string `json:"package"`
	Version string `json:"version"`
	// loading, loaded
	Model string `json:"model"`
	// progress
	Done  int `json:"done"`
	Total int `json:"total"`
	// embedding
	Index  int `json:"index"`
	Length int `json:"length"`
	DModel int `json:"d_model"`
	// structure, target_failed
	Target string   `json:"target"`
	Sample int      `json:"sample"`
	File   string   `json:"file"`
	Tokens int      `json:"tokens"`
	PTM    *float64 `json:"ptm"`
	IPTM   *float64 `json:"iptm"`
	PLDDT  *float64 `json:"plddt"`
	// done
	Passes   int      `json:"passes"`
	Loads    int      `json:"loads"`
	Resident []string `json:"resident"`
	// error, target_failed
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
	OOM       bool   `json:"oom"`
	Sequence  string `json:"sequence"`

	payload []byte
}

// floats returns n float32 values of the payload starting at value off.
func (e *event) floats(off, n int) ([]float32, error) {
	if (off+n)*4 > len(e.payload) {
		return nil, fmt.Errorf("the driver's %s event carries %d bytes, too few for %d values", e.Event, len(e.payload), off+n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(e.payload[(off+i)*4:]))
	}
	return out, nil
}

// writeFrame writes one request: its JSON header (without payload).
func writeFrame(w io.Writer, header any) error {
	raw, err := json.Marshal(header)
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 4+len(raw))
	binary.BigEndian.PutUint32(buf, uint32(len(raw)))
	_, err = w.Write(append(buf, raw...))
	return err
}

// readEvent reads one frame; io.EOF means the stream ended cleanly between frames.
func readEvent(r io.Reader) (*event, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("the driver's output ended inside a frame")
		}
		return nil, err
	}
	size := binary.BigEndian.Uint32(head[:])
	if size > maxHeader {
		return nil, fmt.Errorf("the driver wrote something other than a frame to its output (a header of %d bytes)", size)
	}
	raw := make([]byte, size)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("the driver's output ended inside a frame: %w", err)
	}
	var e event
	if err := toolkit.UnmarshalPythonJSON(raw, &e); err != nil {
		return nil, fmt.Errorf("the driver wrote a frame that is not JSON: %w", err)
	}
	if e.Bytes < 0 || e.Bytes > 1<<36 {
		return nil, fmt.Errorf("the driver announced a payload of %d bytes", e.Bytes)
	}
	e.payload = make([]byte, e.Bytes)
	if _, err := io.ReadFull(r, e.payload); err != nil {
		return nil, fmt.Errorf("the driver's output ended inside a payload: %w", err)
	}
	return &e, nil
}
