package toolkit

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"slices"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
)

// recordingSteps are Steps that note what RunSteps asked of them.
type recordingSteps struct {
	calls    []string
	writeErr error
	exit     error // what Results was given
}

func (s *recordingSteps) WriteInputs() error {
	s.calls = append(s.calls, "write")
	return s.writeErr
}

func (s *recordingSteps) Command() engine.Command {
	s.calls = append(s.calls, "command")
	return engine.Command{Path: "ignored", Args: []string{"run", "in"}}
}

func (s *recordingSteps) Results(exit error) (*engine.Output, error) {
	s.calls = append(s.calls, "results")
	s.exit = exit
	return &engine.Output{}, nil
}

func TestRunSteps(t *testing.T) {
	t.Parallel()
	crash := errors.New("exit code 1")
	notFound := &exec.Error{Name: "/opt/fold", Err: exec.ErrNotFound}
	tests := []struct {
		name      string
		tools     engine.Tools
		planErr   error
		writeErr  error
		execErr   error
		cancel    bool
		wantCalls []string
		wantErr   bool
	}{
		{"the tool exits 0", nil, nil, nil, nil, false, []string{"write", "command", "exec", "results"}, false},
		{"the tool fails: its files decide", nil, nil, nil, crash, false, []string{"write", "command", "exec", "results"}, false},
		{"canceled", nil, nil, nil, context.Canceled, true, []string{"write", "command", "exec"}, true},
		{"the tool cannot be started", nil, nil, nil, notFound, false, []string{"write", "command", "exec"}, true},
		{"the plan fails", nil, errors.New("bad input"), nil, nil, false, nil, true},
		{"writing the inputs fails", nil, nil, errors.New("disk full"), nil, false, []string{"write"}, true},
		{"no tool", engine.Tools{}, nil, nil, nil, false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The tool's name is one no machine has on PATH.
			tool := &Tool{Name: "fold-chaperone-test", Install: "Fold"}
			tools := engine.Tools{tool.Name: "/opt/fold"}
			if tt.tools != nil {
				tools = tt.tools
			}
			steps := &recordingSteps{writeErr: tt.writeErr}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ran engine.Command
			run := &engine.Run{WorkDir: "work", Tools: tools, Exec: func(ctx context.Context, c engine.Command) error {
				steps.calls, ran = append(steps.calls, "exec"), c
				if tt.cancel {
					cancel()
				}
				return tt.execErr
			}}
			var planned string
			plan := func(run *engine.Run, workDir string) (Steps, error) {
				planned = workDir
				return steps, tt.planErr
			}
			_, err := RunSteps(ctx, run, tool, plan)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(steps.calls, tt.wantCalls) {
				t.Fatalf("err %v, calls %v; want error %v, calls %v", err, steps.calls, tt.wantErr, tt.wantCalls)
			}
			if len(tt.wantCalls) > 2 && (ran.Path != "/opt/fold" || !reflect.DeepEqual(ran.Args, []string{"run", "in"})) {
				t.Errorf("ran %+v; want the tool's path with the steps' arguments", ran)
			}
			if planned != "" && planned[0] != '/' {
				t.Errorf("the plan got the work folder %q; want it absolute", planned)
			}
			if slices.Contains(tt.wantCalls, "results") && steps.exit != tt.execErr {
				t.Errorf("Results was given %v, want the exit %v", steps.exit, tt.execErr)
			}
		})
	}
}
