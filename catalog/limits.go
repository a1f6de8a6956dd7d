package catalog

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// DefaultLimits returns every default of decisions.md's Limits table.
func DefaultLimits() Limits {
	return Limits{
		ResidueCeiling:        1024,
		ChainsPerComplex:      20,
		LigandsPerComplex:     20,
		ConstraintsPerComplex: 50,
		TargetsPerJob:         100,
		MaxContentChars:       1_000_000,
		StructureChars:        700_000,
		EmbedSequences:        50,
		EmbedResidues:         2000,
		RequestBytes:          8 << 20,
		ActiveJobsPerOwner:    16,
		CreatesPerMinute:      60,
		QueuedJobs:            1000,
		RetainedJobs:          1000,
		ListDefault:           20,
		ListMax:               100,
		WaitDefaultSeconds:    25,
		WaitMaxSeconds:        60,
		BoltzGenDesigns:       1000,
		RFD3Designs:           100,
		NameChars:             256,
		ConnectionsPerClient:  64,
		HeldWaitsPerClient:    16,
		PredictRuntime:        3600 * time.Second,
		DesignRuntime:         14400 * time.Second,
		EmbedRuntime:          600 * time.Second,
		Stall:                 900 * time.Second,
	}
}

// Set changes one limit, named as in the "limits" of GET /v1/models; the runtime and stall
// caps are set in seconds. Values below 1 are refused: New would read a zero as "default",
// and no cap of this service means anything at zero or below.
func (l *Limits) Set(name string, value int) error {
	fields := l.byName()
	f, ok := fields[name]
	if !ok {
		return fmt.Errorf("unknown limit %q; valid limits are %s", name, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
	}
	if value < 1 {
		return fmt.Errorf("limit %s must be at least 1, not %d", name, value)
	}
	if f.Type() == reflect.TypeFor[time.Duration]() {
		f.SetInt(int64(time.Duration(value) * time.Second))
	} else {
		f.SetInt(int64(value))
	}
	return nil
}

// byName maps the name of every limit to its field in l.
func (l *Limits) byName() map[string]reflect.Value {
	fields := map[string]reflect.Value{
		"predict_runtime_seconds": reflect.ValueOf(&l.PredictRuntime).Elem(),
		"design_runtime_seconds":  reflect.ValueOf(&l.DesignRuntime).Elem(),
		"embed_runtime_seconds":   reflect.ValueOf(&l.EmbedRuntime).Elem(),
		"stall_seconds":           reflect.ValueOf(&l.Stall).Elem(),
	}
	v := reflect.ValueOf(l).Elem()
	for i := range v.NumField() {
		if name := jsonName(v.Type().Field(i)); name != "" {
			fields[name] = v.Field(i)
		}
	}
	return fields
}
