package slurm

import (
	"slices"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

func TestSbatchOptions(t *testing.T) {
	base := []string{"--job-name=chaperone-J-2", "--comment=chaperone:login-1", "--output=/shared/J-2/slurm.out",
		"--chdir=/shared/J-2", "--no-requeue"}
	tests := []struct {
		name   string
		submit Submit
		kind   job.Kind
		want   []string
	}{
		{"options for the kind, then for the model, after the general ones", Submit{Time: "1:00:00", Options: []string{"--mem=8G"},
			For: map[string][]string{"predict": {"--partition=fold"}, "boltz2": {"--mem=64G"}, "embed": {"--partition=small"}, "rfd3": {"--mem=1G"}}},
			job.PredictKind, append(slices.Clone(base), "--time=1:00:00", "--mem=8G", "--partition=fold", "--mem=64G")},
		{"the runtime cap plus the margin, rounded up to minutes", Submit{TimeMargin: 5 * time.Minute}, job.PredictKind,
			append(slices.Clone(base), "--time=66")},
		{"no cap", Submit{}, job.EmbedKind, append(slices.Clone(base), "--time=UNLIMITED")},
		{"every request", Submit{Partition: "gpu", Account: "lab-42", GPUs: 1, Gres: "gpu:a100:1", Time: "2:00:00",
			Options: []string{"--qos=high", "--constraint=a100"}}, job.DesignKind,
			append(slices.Clone(base), "--time=2:00:00", "--partition=gpu", "--account=lab-42", "--gpus=1",
				"--gres=gpu:a100:1", "--qos=high", "--constraint=a100")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Config{WorkerID: "login-1", Submit: tc.submit,
				Runtime: map[job.Kind]time.Duration{job.PredictKind: time.Hour + 30*time.Second, job.DesignKind: time.Hour}})
			tr := &tracked{lease: worker.Lease{Fence: worker.Fence{JobID: "J", Attempt: 2}, Kind: tc.kind, RunModel: "boltz2"}, dir: "/shared/J-2"}
			if got := e.sbatchOptions(tr); !slices.Equal(got, tc.want) {
				t.Errorf("sbatch options\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
