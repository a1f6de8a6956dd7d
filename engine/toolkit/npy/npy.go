// Package npy reads and writes NumPy's array files: .npy (one array, format versions 1 to
// 3) and .npz (a zip of .npy files, as np.savez and np.savez_compressed write them). The
// tools write their per-residue and pair scores this way (Boltz's plddt_, pae_ and pde_
// files), and chaperone writes embeddings this way for callers to load with numpy.
//
// Arrays hold booleans, integers, floats or NumPy's unicode strings; structured and
// object arrays are refused. It imports nothing of chaperone's.
package npy

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Array is an n-dimensional array.
type Array struct {
	// Shape is the size of each dimension; empty for a 0-d array, which holds one value.
	Shape []int
	// Data holds the values in C order (the last index varies fastest): one of []bool,
	// []int8, []uint8, []int16, []uint16, []int32, []uint32, []int64, []uint64, []float32,
	// []float64, or []string for NumPy's unicode strings.
	Data any
}

// Len is the number of values the shape holds.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// Floats returns the values of a numeric or boolean array as float64s.
func (a *Array) Floats() ([]float64, error) {
	v := reflect.ValueOf(a.Data)
	if v.Kind() != reflect.Slice {
		return nil, fmt.Errorf("npy: array data of type %T", a.Data)
	}
	out := make([]float64, v.Len())
	for i := range out {
		switch e := v.Index(i); e.Kind() {
		case reflect.Bool:
			if e.Bool() {
				out[i] = 1
			}
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			out[i] = float64(e.Int())
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			out[i] = float64(e.Uint())
		case reflect.Float32, reflect.Float64:
			out[i] = e.Float()
		default:
			return nil, fmt.Errorf("npy: %T is not numeric", a.Data)
		}
	}
	return out, nil
}

const magic = "\x93NUMPY"

// descrs maps NumPy's type codes (kind and size, without the byte order) to a value of
// the Go type that holds one element.
var descrs = map[string]any{
	"b1": false, "i1": int8(0), "u1": uint8(0), "i2": int16(0), "u2": uint16(0), "i4": int32(0), "u4": uint32(0),
	"i8": int64(0), "u8": uint64(0), "f4": float32(0), "f8": float64(0),
}

var (
	descrField   = regexp.MustCompile(`'descr'\s*:\s*'([<>|=]?)([a-zA-Z])(\d+)'`)
	fortranField = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	shapeField   = regexp.MustCompile(`'shape'\s*:\s*\(([\d,\s]*)\)`)
)

// Read reads one array in NPY format.
func Read(r io.Reader) (*Array, error) {
	br := bufio.NewReader(r)
	pre := make([]byte, 8)
	if _, err := io.ReadFull(br, pre); err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if string(pre[:6]) != magic {
		return nil, errors.New("npy: not an NPY file")
	}
	var headerLen int
	switch pre[6] {
	case 1:
		var n uint16
		if err := binary.Read(br, binary.LittleEndian, &n); err != nil {
			return nil, fmt.Errorf("npy: %w", err)
		}
		headerLen = int(n)
	case 2, 3:
		var n uint32
		if err := binary.Read(br, binary.LittleEndian, &n); err != nil {
			return nil, fmt.Errorf("npy: %w", err)
		}
		headerLen = int(n)
	default:
		return nil, fmt.Errorf("npy: format version %d.%d", pre[6], pre[7])
	}
	header := make([]byte, headerLen)
	if _, err := io.ReadFull(br, header); err != nil {
		return nil, fmt.Errorf("npy: header: %w", err)
	}
	d := descrField.FindStringSubmatch(string(header))
	f := fortranField.FindStringSubmatch(string(header))
	s := shapeField.FindStringSubmatch(string(header))
	if d == nil || f == nil || s == nil {
		return nil, fmt.Errorf("npy: unsupported header %q", strings.TrimSpace(string(header)))
	}
	a := &Array{Shape: []int{}}
	for _, part := range strings.Split(s[1], ",") {
		if part = strings.TrimSpace(part); part != "" {
			n, err := strconv.Atoi(part)
			if err != nil {
				return nil, fmt.Errorf("npy: shape %q", s[1])
			}
			a.Shape = append(a.Shape, n)
		}
	}
	var order binary.ByteOrder = binary.LittleEndian
	if d[1] == ">" {
		order = binary.BigEndian
	}
	size, _ := strconv.Atoi(d[3])
	n := a.Len()
	switch {
	case d[2] == "U":
		a.Data = make([]string, n)
		buf := make([]uint32, size)
		for i := range n {
			if err := binary.Read(br, order, buf); err != nil {
				return nil, fmt.Errorf("npy: data: %w", err)
			}
			var sb strings.Builder
			for _, c := range buf {
				if c != 0 {
					sb.WriteRune(rune(c))
				}
			}
			a.Data.([]string)[i] = sb.String()
		}
	case descrs[d[2]+d[3]] != nil:
		a.Data = reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(descrs[d[2]+d[3]])), n, n).Interface()
		if err := binary.Read(br, order, a.Data); err != nil {
			return nil, fmt.Errorf("npy: data: %w", err)
		}
	default:
		return nil, fmt.Errorf("npy: unsupported type %s%s%s", d[1], d[2], d[3])
	}
	if f[1] == "True" {
		a.Data = fromFortran(a.Data, a.Shape)
	}
	return a, nil
}

// fromFortran reorders values stored column-major into row-major order.
func fromFortran(data any, shape []int) any {
	src := reflect.ValueOf(data)
	dst := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
	idx := make([]int, len(shape))
	for c := range src.Len() {
		// idx is the multi-index of row-major position c; its column-major position:
		f, stride := 0, 1
		for k := range shape {
			f += idx[k] * stride
			stride *= shape[k]
		}
		dst.Index(c).Set(src.Index(f))
		for k := len(shape) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return dst.Interface()
}

// Write writes one array in NPY format, little-endian, as np.save does.
func Write(w io.Writer, a *Array) error {
	v := reflect.ValueOf(a.Data)
	if v.Kind() != reflect.Slice || v.Len() != a.Len() {
		return fmt.Errorf("npy: shape %v does not fit data of type %T", a.Shape, a.Data)
	}
	var descr string
	var body bytes.Buffer
	if strs, ok := a.Data.([]string); ok {
		width := 1
		for _, s := range strs {
			width = max(width, utf8.RuneCountInString(s))
		}
		descr = "<U" + strconv.Itoa(width)
		for _, s := range strs {
			chars := make([]uint32, width)
			for i, r := range []rune(s) {
				chars[i] = uint32(r)
			}
			_ = binary.Write(&body, binary.LittleEndian, chars)
		}
	} else {
		elem := v.Type().Elem()
		for code, zero := range descrs {
			if reflect.TypeOf(zero) == elem {
				descr = code
			}
		}
		if descr == "" {
			return fmt.Errorf("npy: unsupported data of type %T", a.Data)
		}
		order := "<"
		if descr[1] == '1' {
			order = "|"
		}
		descr = order + descr
		if err := binary.Write(&body, binary.LittleEndian, a.Data); err != nil {
			return err
		}
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = strconv.Itoa(d)
	}
	shape := strings.Join(dims, ", ")
	if len(a.Shape) == 1 {
		shape += ","
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape)
	// The preamble (magic, version, length, header and its closing newline) is padded with
	// spaces to a multiple of 64 bytes, so that the data are aligned.
	var pre bytes.Buffer
	pre.WriteString(magic)
	lenSize := 2
	if 10+len(header)+1 > 65535 {
		lenSize = 4
	}
	header += strings.Repeat(" ", (64-(len(magic)+2+lenSize+len(header)+1)%64)%64) + "\n"
	if lenSize == 2 {
		pre.Write([]byte{1, 0})
		_ = binary.Write(&pre, binary.LittleEndian, uint16(len(header)))
	} else {
		pre.Write([]byte{2, 0})
		_ = binary.Write(&pre, binary.LittleEndian, uint32(len(header)))
	}
	pre.WriteString(header)
	if _, err := w.Write(pre.Bytes()); err != nil {
		return err
	}
	_, err := w.Write(body.Bytes())
	return err
}

// ReadNPZ reads every array of an .npz file, by name (the member's name without .npy).
func ReadNPZ(path string) (map[string]*Array, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("npz %s: %w", path, err)
	}
	defer z.Close()
	out := make(map[string]*Array, len(z.File))
	for _, f := range z.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("npz %s: %s: %w", path, f.Name, err)
		}
		a, err := Read(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("npz %s: %s: %w", path, f.Name, err)
		}
		out[name] = a
	}
	return out, nil
}

// WriteNPZ writes the arrays to a compressed .npz file, as np.savez_compressed does, in
// the order of their names.
func WriteNPZ(path string, arrays map[string]*Array) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	z := zip.NewWriter(file)
	names := make([]string, 0, len(arrays))
	for name := range arrays {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w, err := z.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Deflate})
		if err == nil {
			err = Write(w, arrays[name])
		}
		if err != nil {
			file.Close()
			return fmt.Errorf("npz %s: %s: %w", path, name, err)
		}
	}
	if err := z.Close(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
