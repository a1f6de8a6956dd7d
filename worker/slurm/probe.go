package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/doctor"
)

// The probe: `chaperone doctor --json` run as a batch job with the jobs' own request, so
// that the executor offers the models the compute nodes can run rather than every model it
// knows, and the catalog says, for the others, what the nodes lack (doctor's words). Its
// folder is <slurm-dir>/probe-<worker id>/.
const (
	fileProbeReport = "doctor.json"
	// probeTimeLimit is the probe's --time unless every job's is set: doctor asks each tool
	// its version and runs its self-check, which takes seconds, or a minute for a slow
	// Python import.
	probeTimeLimit = "10"
)

// probeName is the probe's folder and (with the chaperone- prefix) its batch job's name.
func (e *Executor) probeName() string { return "probe-" + e.cfg.WorkerID }

// probeEvery is how often the compute nodes are probed again, so that a tool installed
// there is offered without a restart of the executor (a plain worker re-checks its own
// tools every minute; a probe costs a batch job, so it runs less often).
const probeEvery = time.Hour

// keepProbing probes the compute nodes at start and every probeEvery after.
func (e *Executor) keepProbing(ctx context.Context) {
	for {
		e.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(probeEvery):
		}
	}
}

// probe runs doctor on a compute node and, once it answered, offers only the models it
// found runnable. Until the first probe answered, the executor offers every model of
// Config.Models, and when a probe fails it keeps what it offered: a job whose tool a node
// lacks then fails with the engine's own reason, as it would without the probe.
func (e *Executor) probe(ctx context.Context) {
	dir := filepath.Join(e.cfg.Dir, e.probeName())
	name := "chaperone-" + e.probeName()
	// A probe an earlier run of this executor left is of no use now.
	if ids, err := e.cfg.Slurm.Named(ctx, name); err == nil {
		for _, id := range ids {
			e.cfg.Slurm.Cancel(ctx, id)
		}
	}
	defer os.RemoveAll(dir)
	report, err := e.runProbe(ctx, dir, name)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("the probe of the compute nodes failed; the models offered stay as they were", "error", err.Error())
		}
		return
	}
	offered, missing := probed(report, e.cfg.Models)
	e.mu.Lock()
	e.models, e.missing = offered, missing
	e.mu.Unlock()
	e.log.Info("probed the compute nodes", "models", offered, "unavailable", len(missing))
	for m, why := range missing {
		e.log.Info("model unavailable on the compute nodes", "model", m, "reason", why)
	}
	if err := e.announce(ctx); err != nil && ctx.Err() == nil {
		e.log.Warn("announcing the probed models", "error", err.Error())
	}
}

// runProbe submits the probe and waits for its report.
func (e *Executor) runProbe(ctx context.Context, dir, name string) (*doctor.Report, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{shellQuote(e.cfg.Binary), "doctor", "--json", "--data", shellQuote(dir)}
	for _, k := range slices.Sorted(maps.Keys(e.cfg.Tools)) {
		args = append(args, "--tool", shellQuote(k+"="+e.cfg.Tools[k]))
	}
	// doctor exits 1 when nothing can run; its report says why, which is what is wanted.
	script := fmt.Sprintf("#!/bin/sh\n# chaperone: what the compute nodes can run, for worker %s\n%s > %s\nexit 0\n",
		e.cfg.WorkerID, strings.Join(args, " "), shellQuote(filepath.Join(dir, fileProbeReport)))
	if err := os.WriteFile(filepath.Join(dir, fileScript), []byte(script), 0o755); err != nil {
		return nil, err
	}
	limit := probeTimeLimit
	if e.cfg.Submit.Time != "" {
		limit = e.cfg.Submit.Time
	}
	id, err := e.cfg.Slurm.Submit(ctx, e.batchOptions(name, dir, limit), filepath.Join(dir, fileScript))
	if err != nil {
		return nil, err
	}
	e.log.Info("probing the compute nodes with chaperone doctor", "slurm_job", id)
	defer e.cfg.Slurm.Cancel(context.WithoutCancel(ctx), id) // a no-op once it ended
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(e.leaseTiming().Heartbeat):
		}
		queued, err := e.cfg.Slurm.Queue(ctx, []string{id})
		if err != nil {
			continue
		}
		if _, waiting := queued[id]; waiting {
			continue
		}
		var r doctor.Report
		b, err := os.ReadFile(filepath.Join(dir, fileProbeReport))
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || len(r.Models) == 0 {
			return nil, errors.Join(fmt.Errorf("the probe (Slurm job %s) gave no report", id), err,
				errors.New(strings.TrimSpace(tail(filepath.Join(dir, fileOutput)))))
		}
		return &r, nil
	}
}

// probed splits the configured models into those the probe found runnable (ok, or warn:
// they run, though something may stop them) and, for the others, doctor's reason.
func probed(r *doctor.Report, configured []string) (offered []string, missing map[string]string) {
	missing = map[string]string{}
	verdicts := map[string]doctor.ModelReport{}
	for _, m := range r.Models {
		verdicts[m.Model] = m
	}
	for _, m := range configured {
		v, ok := verdicts[m]
		switch {
		case !ok:
			missing[m] = "the compute nodes' chaperone does not know this model"
		case v.Status == doctor.No:
			missing[m] = v.Reason
		default:
			offered = append(offered, m)
		}
	}
	slices.Sort(offered)
	return offered, missing
}
