package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/internal/slurmtest"
	"github.com/chaperone-bio/chaperone/store"
)

// The Slurm executor's tests: a server without a worker of its own, and `chaperone worker
// --slurm` in a process of its own that hands each job to the one-node cluster of
// .ci/slurm, where the batch job runs the boltz engine with the stand-in as its tool.

// slurmServer is a server for a Slurm executor: boltz2 on the real engine, no worker of
// its own, and a lease long enough for an executor to be killed and started again.
func slurmServer(t *testing.T) *server {
	slurmtest.Require(t)
	return startServer(t, withBoltz(t), withoutWorker(), func(c *app.Config) {
		c.Heartbeat, c.LeaseTTL = 200*time.Millisecond, 10*time.Second
	})
}

// executor is a `chaperone worker --slurm` process of a test.
type executor struct {
	t    *testing.T
	args []string
	dir  string // --slurm-dir
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

// startExecutor starts an executor for s, with the extra flags given, and returns once the
// server counts it as a live worker.
func startExecutor(t *testing.T, s *server, id string, extra ...string) *executor {
	t.Helper()
	e := newExecutor(t, s, id, extra...)
	e.start()
	eventually(t, 20*time.Second, "the executor announced", func() bool {
		ws, err := s.Store.LiveWorkers(context.Background(), time.Now().Add(-time.Minute))
		return err == nil && slices.ContainsFunc(ws, func(w store.Worker) bool { return strings.HasSuffix(w.ID, "/"+id) })
	})
	return e
}

// newExecutor sets up an executor for s with a worker token of its own, without starting it.
func newExecutor(t *testing.T, s *server, id string, extra ...string) *executor {
	t.Helper()
	token, rec := apikey.New("slurm-"+id, time.Now())
	rec.Worker = true
	if err := s.Store.CreateKey(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	e := &executor{t: t, dir: t.TempDir()}
	e.args = append([]string{"worker", "--server", s.URL, "--token", token, "--id", id, "--data", t.TempDir(),
		"--slurm", "--slurm-dir", e.dir, "--slurm-poll", "1s", "--slurm-models", "boltz2", "--tool", "boltz=" + boltzStandIn(t),
		"--drain-timeout", "1s", "--log-level", "debug"}, extra...)
	t.Cleanup(func() {
		if e.cmd == nil {
			return
		}
		if e.cmd.ProcessState == nil {
			e.cmd.Process.Signal(syscall.SIGTERM)
			e.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("executor output:\n%s", e.out)
		}
		cancelSlurmJobsOf(id)
	})
	return e
}

func (e *executor) start() {
	e.t.Helper()
	e.out = &bytes.Buffer{}
	e.cmd = exec.Command(chaperoneBinary(e.t), e.args...)
	e.cmd.Stdout, e.cmd.Stderr = e.out, e.out
	if err := e.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
}

// kill ends the executor with SIGKILL, as a crash would.
func (e *executor) kill() {
	e.t.Helper()
	e.cmd.Process.Kill()
	e.cmd.Wait()
}

// cancelSlurmJobsOf cancels whatever batch jobs an executor left, by their comment.
func cancelSlurmJobsOf(workerID string) {
	out, _ := exec.Command("squeue", "-h", "-o", "%i %k").Output()
	for line := range strings.Lines(string(out)) {
		if id, comment, ok := strings.Cut(strings.TrimSpace(line), " "); ok && comment == "chaperone:"+workerID {
			exec.Command("scancel", id).Run()
		}
	}
}

// slurmJobs lists the ids of the batch jobs of a job's first attempt that Slurm knows,
// finished ones included.
func slurmJobs(t *testing.T, jobID string) []string {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-t", "all", "-n", "chaperone-"+jobID+"-1", "-o", "%i").CombinedOutput()
	if err != nil {
		t.Fatalf("squeue: %v %s", err, out)
	}
	return strings.Fields(string(out))
}

// slurmState is a batch job's state as scontrol shows it.
func slurmState(t *testing.T, slurmID string) string {
	t.Helper()
	out, _ := exec.Command("scontrol", "show", "job", "-o", slurmID).CombinedOutput()
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v
		}
	}
	return ""
}

func (s *server) logOf(id string) string {
	s.t.Helper()
	return string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
}

// A job waits in Slurm's queue (held), showing queued with the scheduler as the reason,
// then runs in a batch job once released, and its results and log reach the API. A
// cancel then reaches scancel: the batch job ends CANCELLED and the tool is gone.
func TestSlurmJobWaitsInSlurmThenRunsThere(t *testing.T) {
	t.Parallel()
	s := slurmServer(t)
	// Predictions go to their own partition (--slurm-option-for), as an operator may send
	// each kind of job where it belongs.
	e := startExecutor(t, s, "slurm-held", "--slurm-option=--hold", "--slurm-option-for=predict=--partition=scavenger")

	start := time.Now()
	id := s.create("/v1/predictions", map[string]any{"params": map[string]any{"use_msa_server": false},
		"targets": []map[string]any{{"name": "lysozyme", "content": ">A\nKVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAK\n"}}})
	j := s.waitFor(id, 20*time.Second, func(j map[string]any) bool { return j["queue"] != nil })
	mustf(t, j["status"] == "queued" && j["stage"] == nil && j["started_at"] == nil && j["waiting_for_device"] == true &&
		j["queue"].(map[string]any)["reason"] == "scheduler", "a job held in Slurm: %v", j)
	// The job it holds in Slurm takes one of the executor's 8 slots.
	slots := workerSlots(t, string(s.get("/metrics").expect(http.StatusOK).Body))
	mustf(t, slots["busy"] == 1 && slots["idle"] == 7, "worker slots %v while Slurm holds the job, want 1 of 8 busy", slots)
	ids := slurmJobs(t, id)
	mustf(t, len(ids) == 1, "Slurm jobs of %s: %v", id, ids)
	eventually(t, 10*time.Second, "the pending reason in the log", func() bool {
		return strings.Contains(s.logOf(id), "== chaperone: Slurm job "+ids[0]+" pending in partition scavenger (JobHeldUser) ==")
	})

	if out, err := exec.Command("scontrol", "release", ids[0]).CombinedOutput(); err != nil {
		t.Fatalf("scontrol release: %v %s", err, out)
	}
	released := time.Now()
	j = s.waitFor(id, 60*time.Second, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
	mustf(t, j["status"] == "succeeded", "job %v", j)
	t.Logf("through Slurm: %.1f s from create, %.1f s from release", time.Since(start).Seconds(), time.Since(released).Seconds())
	rows, arts := s.rowsOf(id)
	mustf(t, rows["lysozyme"]["status"] == "ok" && len(arts) > 0, "rows %v, artifacts %v", rows, arts)
	for _, a := range arts {
		s.get("/v1/jobs/" + id + "/artifacts/" + a.(map[string]any)["path"].(string)).expect(http.StatusOK)
	}
	log := s.logOf(id)
	mustf(t, strings.Contains(log, "== chaperone: running as Slurm job "+ids[0]+" on node ") &&
		strings.Contains(log, "job succeeded"), "log:\n%s", log)
	mustf(t, slurmState(t, ids[0]) == "COMPLETED", "Slurm job %s: %s", ids[0], slurmState(t, ids[0]))
	eventually(t, 10*time.Second, "the job folder removed", func() bool {
		_, err := os.Stat(filepath.Join(e.dir, id+"-1"))
		return os.IsNotExist(err)
	})

	t.Run("a cancel reaches scancel", func(t *testing.T) {
		id := s.create("/v1/predictions", map[string]any{"targets": []map[string]any{{"name": "slow", "content": ">A\nMKTAYIAK\n"}}})
		var ids []string
		eventually(t, 20*time.Second, "the batch job submitted", func() bool { ids = slurmJobs(t, id); return len(ids) == 1 })
		if out, err := exec.Command("scontrol", "release", ids[0]).CombinedOutput(); err != nil {
			t.Fatalf("scontrol release: %v %s", err, out)
		}
		pid := waitForPIDFile(t, filepath.Join(e.dir, id+"-1"), id)
		s.waitFor(id, 20*time.Second, func(j map[string]any) bool { return j["stage"] == "inference" })
		s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
		s.waitStatus(id, "canceled")
		eventually(t, 20*time.Second, "the batch job canceled", func() bool { return slurmState(t, ids[0]) == "CANCELLED" })
		waitProcessGone(t, pid, 10*time.Second)
		eventually(t, 20*time.Second, "the job folder removed", func() bool {
			_, err := os.Stat(filepath.Join(e.dir, id+"-1"))
			return os.IsNotExist(err)
		})
	})
}

// A batch job that outlives its Slurm time limit fails the job with that reason. Slurm
// rounds a limit up to a minute and checks limits about every 30 s, so this takes 60 to 90 s.
func TestSlurmTimeLimitFailsTheJob(t *testing.T) {
	t.Parallel()
	s := slurmServer(t)
	startExecutor(t, s, "slurm-time", "--slurm-time=0:15")
	id := s.create("/v1/predictions", map[string]any{"targets": []map[string]any{
		{"name": "slow1", "content": ">A\nMKTAYIAK\n"}, {"name": "slow2", "content": ">A\nMKTAYIAK\n"},
		{"name": "slow3", "content": ">A\nMKTAYIAK\n"}, {"name": "slow4", "content": ">A\nMKTAYIAK\n"}}})
	j := s.waitFor(id, 150*time.Second, func(j map[string]any) bool { return j["status"] == "failed" || j["status"] == "succeeded" })
	mustf(t, j["error"] == "Slurm stopped the job at its time limit of 0:01:00", "job %v", j)
	ids := slurmJobs(t, id)
	mustf(t, len(ids) == 1 && slurmState(t, ids[0]) == "TIMEOUT", "Slurm jobs %v", ids)
	log := s.logOf(id)
	mustf(t, strings.Contains(log, "== chaperone: Slurm stopped the batch job ==") &&
		strings.Contains(log, "== chaperone: job failed: Slurm stopped the job at its time limit of 0:01:00 ==") &&
		!strings.Contains(log, "returns to the queue"), "log:\n%s", log)
}

// An executor whose request Slurm would refuse (here: a partition the cluster does not
// have, for every job or for one kind; sbatch --test-only says so) stops at start with
// Slurm's words, before it offers anything, instead of failing every job it would lease.
func TestSlurmExecutorRefusesABadRequestAtStart(t *testing.T) {
	t.Parallel()
	s := slurmServer(t)
	for i, tc := range []struct {
		flag, words string
	}{
		{"--slurm-partition=gpux", "Slurm would refuse the jobs as configured"},
		{"--slurm-option-for=embed=--partition=gpux", "Slurm would refuse the embed jobs as configured (--slurm-option-for embed=…)"},
	} {
		e := newExecutor(t, s, fmt.Sprintf("slurm-refused-%d", i), tc.flag)
		e.start()
		done := make(chan error, 1)
		go func() { done <- e.cmd.Wait() }()
		select {
		case err := <-done:
			mustf(t, err != nil, "%s: the executor exited without an error", tc.flag)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the executor did not stop", tc.flag)
		}
		mustf(t, strings.Contains(e.out.String(), tc.words) &&
			strings.Contains(e.out.String(), "invalid partition specified: gpux"), "%s: executor output:\n%s", tc.flag, e.out)
	}
	ws, err := s.Store.LiveWorkers(context.Background(), time.Now().Add(-time.Minute))
	mustf(t, err == nil && len(ws) == 0, "workers announced: %v %v", ws, err)
}

// An executor killed while its job runs in Slurm takes the job up again when it restarts,
// even without the Slurm job id it had not yet written down: the batch job runs on,
// nothing is submitted twice, and the job finishes.
func TestSlurmExecutorRestartAdoptsItsJobs(t *testing.T) {
	t.Parallel()
	s := slurmServer(t)
	e := startExecutor(t, s, "slurm-restart")
	id := s.create("/v1/predictions", map[string]any{"targets": []map[string]any{{"name": "slow", "content": ">A\nMKTAYIAK\n"}}})
	s.waitFor(id, 30*time.Second, func(j map[string]any) bool { return j["stage"] == "inference" })
	e.kill()
	// As if it died between sbatch and writing down the id: it finds the batch job by name.
	if err := os.Remove(filepath.Join(e.dir, id+"-1", "slurm_job_id")); err != nil {
		t.Fatal(err)
	}
	e.start()
	j := s.waitFor(id, 60*time.Second, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
	mustf(t, j["status"] == "succeeded", "job %v", j)
	ids := slurmJobs(t, id)
	mustf(t, len(ids) == 1, "Slurm jobs of %s: %v, want one", id, ids)
	log := s.logOf(id)
	mustf(t, strings.Count(log, "running as Slurm job") == 1 && strings.Contains(log, "restarted and follows"), "log:\n%s", log)
}

// Without --slurm-models the executor runs chaperone doctor on a compute node as a batch
// job, and then offers only what the node can run: boltz2, whose stand-in is there; for
// a model whose tool the node lacks, the catalog shows doctor's reason.
func TestSlurmProbeOffersWhatTheNodesCanRun(t *testing.T) {
	t.Parallel()
	s := slurmServer(t)
	startExecutor(t, s, "slurm-probe", "--slurm-models=")
	eventually(t, 60*time.Second, "the probe narrowed the models down", func() bool {
		r := catalogReasons(s)
		return r["boltz2"] == "" && r["protenix-v2"] != ""
	})
	if why := catalogReasons(s)["protenix-v2"]; why != "the protenix command is not installed" {
		t.Errorf("protenix-v2 unavailable because %q, want doctor's words for a missing tool", why)
	}
}

// A batch job that Slurm preempts is a lost attempt, not a failure: the job goes back to
// the queue and runs again, as attempt 2, in a batch job of its own. The cluster's urgent
// partition preempts jobs of its scavenger partition (.ci/slurm). Not parallel: the
// preempting job needs both CPUs of the one node, which the other Slurm tests would hold.
func TestSlurmPreemptionIsALostAttempt(t *testing.T) {
	s := slurmServer(t)
	startExecutor(t, s, "slurm-preempt", "--slurm-partition=scavenger")
	id := s.create("/v1/predictions", map[string]any{"targets": []map[string]any{{"name": "slow", "content": ">A\nMKTAYIAK\n"}}})
	s.waitFor(id, 30*time.Second, func(j map[string]any) bool { return j["stage"] == "inference" })
	first := slurmJobs(t, id)
	mustf(t, len(first) == 1, "Slurm jobs of %s: %v", id, first)

	out, err := exec.Command("sbatch", "--parsable", "--partition=urgent", "--cpus-per-task=2", "--output=/dev/null",
		"--job-name=chaperone-test-urgent", "--wrap=sleep 2").CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v %s", err, out)
	}
	urgent := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("scancel", urgent).Run() })
	eventually(t, 30*time.Second, "the batch job preempted", func() bool { return slurmState(t, first[0]) == "PREEMPTED" })

	j := s.waitFor(id, 120*time.Second, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
	mustf(t, j["status"] == "succeeded", "job %v", j)
	log := s.logOf(id)
	mustf(t, strings.Contains(log, "== chaperone: Slurm job "+first[0]+" ended PREEMPTED; the job goes back to the queue ==") &&
		strings.Contains(log, "attempt 2 of predict job "+id), "log:\n%s", log)
	// Its lease runs out, and the server closes the attempt: lost.
	s.everyAttemptEnds(id, "attempt 1 lost: nothing renewed its lease for 10s", "job succeeded in")
	second, err := exec.Command("squeue", "-h", "-t", "all", "-n", "chaperone-"+id+"-2", "-o", "%i").Output()
	mustf(t, err == nil && len(strings.Fields(string(second))) == 1, "Slurm jobs of attempt 2: %q %v", second, err)
}
