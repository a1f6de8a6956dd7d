package npy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/testpython"
)

const python = testpython.Path

// numpy makes sure that Debian's Python has numpy, the independent reader and writer these
// tests hold the package to.
func numpy(t *testing.T) {
	t.Helper()
	testpython.Require(t, "numpy")
}

func runPython(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(python, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("python: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

// described is an array as the tests compare it: numpy's dtype string, the shape and the
// values in C order, as JSON gives them.
type described struct {
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Values []any  `json:"values"`
}

func TestNumpyReadsWhatWeWrite(t *testing.T) {
	t.Parallel()
	numpy(t)
	path := filepath.Join(t.TempDir(), "a.npz")
	arrays := map[string]*Array{
		"pae":      {Shape: []int{2, 3}, Data: []float32{0.5, 1, 1.5, 2, 2.5, 3}},
		"plddt":    {Shape: []int{3}, Data: []float64{0.25, 0.5, 0.75}},
		"sequence": {Shape: []int{}, Data: []string{"MKTAYIΩ"}},
		"ids":      {Shape: []int{2}, Data: []string{"a", "longer"}},
		"count":    {Shape: []int{2, 2}, Data: []int32{1, -2, 3, 4}},
		"big":      {Shape: []int{1}, Data: []int64{1 << 40}},
		"mask":     {Shape: []int{2}, Data: []bool{true, false}},
		"tokens":   {Shape: []int{3}, Data: []uint8{0, 7, 255}},
		"empty":    {Shape: []int{0, 4}, Data: []float32{}},
		"scalar":   {Shape: []int{}, Data: []float64{1}},
	}
	if err := WriteNPZ(path, arrays); err != nil {
		t.Fatal(err)
	}
	out := runPython(t, `
import json, sys, numpy as np
z = np.load(sys.argv[1])
print(json.dumps({k: {"dtype": z[k].dtype.str, "shape": list(z[k].shape), "values": z[k].reshape(-1).tolist()} for k in z.files}))
`, path)
	var got map[string]described
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]described{
		"pae":      {"<f4", []int{2, 3}, []any{0.5, 1.0, 1.5, 2.0, 2.5, 3.0}},
		"plddt":    {"<f8", []int{3}, []any{0.25, 0.5, 0.75}},
		"sequence": {"<U7", []int{}, []any{"MKTAYIΩ"}},
		"ids":      {"<U6", []int{2}, []any{"a", "longer"}},
		"count":    {"<i4", []int{2, 2}, []any{1.0, -2.0, 3.0, 4.0}},
		"big":      {"<i8", []int{1}, []any{float64(1 << 40)}},
		"mask":     {"|b1", []int{2}, []any{true, false}},
		"tokens":   {"|u1", []int{3}, []any{0.0, 7.0, 255.0}},
		"empty":    {"<f4", []int{0, 4}, []any{}},
		"scalar":   {"<f8", []int{}, []any{1.0}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("numpy read\n%v\nwant\n%v", got, want)
	}
}

func TestWeReadWhatNumpyWrites(t *testing.T) {
	t.Parallel()
	numpy(t)
	dir := t.TempDir()
	runPython(t, `
import sys, numpy as np
d = sys.argv[1]
np.savez_compressed(d + "/c.npz", pae=np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
    fortran=np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    big_endian=np.array([1.5, -2.0], dtype=">f8"), sequence=np.array("MKT"), mask=np.array([True, False, True]),
    small=np.array([[-1, 2]], dtype=np.int16), scalar=np.float32(0.125), cube=np.arange(24, dtype=np.uint32).reshape(2, 3, 4).transpose(2, 1, 0))
np.savez(d + "/u.npz", plddt=np.array([0.5, 0.75], dtype=np.float32))
with open(d + "/v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([[1, 2], [3, 4]], dtype=np.int32), version=(2, 0))
`, dir)
	c, err := ReadNPZ(filepath.Join(dir, "c.npz"))
	if err != nil {
		t.Fatal(err)
	}
	cube := make([]uint32, 0, 24)
	for i := range 4 {
		for j := range 3 {
			for k := range 2 {
				cube = append(cube, uint32(k*12+j*4+i)) // arange(24).reshape(2,3,4)[k,j,i]
			}
		}
	}
	want := map[string]*Array{
		"pae":        {Shape: []int{2, 3}, Data: []float32{0, 0.25, 0.5, 0.75, 1, 1.25}},
		"fortran":    {Shape: []int{2, 3}, Data: []int64{0, 1, 2, 3, 4, 5}},
		"big_endian": {Shape: []int{2}, Data: []float64{1.5, -2}},
		"sequence":   {Shape: []int{}, Data: []string{"MKT"}},
		"mask":       {Shape: []int{3}, Data: []bool{true, false, true}},
		"small":      {Shape: []int{1, 2}, Data: []int16{-1, 2}},
		"scalar":     {Shape: []int{}, Data: []float32{0.125}},
		"cube":       {Shape: []int{4, 3, 2}, Data: cube},
	}
	if !reflect.DeepEqual(c, want) {
		for k := range want {
			if !reflect.DeepEqual(c[k], want[k]) {
				t.Errorf("%s = %+v, want %+v", k, c[k], want[k])
			}
		}
		if len(c) != len(want) {
			t.Errorf("arrays %v", c)
		}
	}
	u, err := ReadNPZ(filepath.Join(dir, "u.npz"))
	if err != nil || !reflect.DeepEqual(u["plddt"], &Array{Shape: []int{2}, Data: []float32{0.5, 0.75}}) {
		t.Errorf("uncompressed npz: %+v, %v", u, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "v2.npy"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Read(bytes.NewReader(b))
	if err != nil || !reflect.DeepEqual(v2, &Array{Shape: []int{2, 2}, Data: []int32{1, 2, 3, 4}}) {
		t.Errorf("format 2.0: %+v, %v", v2, err)
	}
	if f, err := c["mask"].Floats(); err != nil || !reflect.DeepEqual(f, []float64{1, 0, 1}) {
		t.Errorf("Floats = %v, %v", f, err)
	}
}

func TestReadRefuses(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"not npy":          "PK\x03\x04",
		"object array":     "\x93NUMPY\x01\x00\x36\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n",
		"structured array": "\x93NUMPY\x01\x00\x46\x00{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n",
		"short data":       "\x93NUMPY\x01\x00\x36\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n\x00\x00",
		"version 9":        "\x93NUMPY\x09\x00",
	} {
		if a, err := Read(bytes.NewReader([]byte(data))); err == nil {
			t.Errorf("%s: read %+v", name, a)
		}
	}
	if err := Write(&bytes.Buffer{}, &Array{Shape: []int{3}, Data: []float32{1}}); err == nil {
		t.Error("a shape that does not fit the data was written")
	}
}
