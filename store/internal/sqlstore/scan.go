package sqlstore

import (
	"encoding/json"
	"fmt"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// summaryRow receives SummaryColumns. Times come as the database has them, for
// Dialect.TimeOf.
type summaryRow struct {
	s                          store.JobSummary
	owner, kind, status        string
	params                     []byte
	created, started, finished any
}

func (r *summaryRow) dest() []any {
	return []any{&r.s.ID, &r.owner, &r.kind, &r.s.Name, &r.s.Model, &r.s.Protocol, &r.s.RunModel,
		&r.params, &r.status, &r.s.Stage, &r.s.Progress, &r.s.Done, &r.s.Total, &r.s.Error, &r.s.Attempt,
		&r.created, &r.started, &r.finished, &r.s.WorkerID, &r.s.Aligning}
}

func (d *Dialect) summary(r *summaryRow) (*store.JobSummary, error) {
	s := &r.s
	o, ok := job.ParseOwner(r.owner)
	if !ok {
		return nil, fmt.Errorf("%s: job %s has a malformed owner %q", d.Name, s.ID, r.owner)
	}
	s.Owner, s.Kind, s.Status = o, job.Kind(r.kind), job.Status(r.status)
	s.CreatedAt, s.StartedAt, s.FinishedAt = d.TimeOf(r.created), d.TimeOf(r.started), d.TimeOf(r.finished)
	if err := json.Unmarshal(r.params, &s.Params); err != nil {
		return nil, fmt.Errorf("%s: job %s params: %w", d.Name, s.ID, err)
	}
	return s, nil
}

// scanSummary reads the columns of SummaryCols, then any extra columns into extra.
func (d *Dialect) scanSummary(row Row, extra ...any) (*store.JobSummary, error) {
	var r summaryRow
	if err := row.Scan(append(append(r.dest(), &r.s.ResultsReady), extra...)...); err != nil {
		return nil, err
	}
	return d.summary(&r)
}

// ScanJob reads the columns of JobCols, then any extra columns into extra.
func (d *Dialect) ScanJob(row Row, extra ...any) (*job.Job, error) {
	var (
		r                        summaryRow
		input, searches, results []byte
		lease, activity          any
	)
	dest := append(r.dest(), &lease, &activity, &results, &input, &searches)
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	s, err := d.summary(&r)
	if err != nil {
		return nil, err
	}
	j := &job.Job{ID: s.ID, Owner: s.Owner, Kind: s.Kind, Name: s.Name, Model: s.Model,
		Protocol: s.Protocol, RunModel: s.RunModel, Params: s.Params,
		Status: s.Status, Stage: s.Stage, Progress: s.Progress, Done: s.Done, Total: s.Total,
		Error: s.Error, Attempt: s.Attempt, WorkerID: s.WorkerID, Aligning: s.Aligning,
		LeaseExpiresAt: d.TimeOf(lease), LastActivityAt: d.TimeOf(activity),
		CreatedAt: s.CreatedAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
	if err := json.Unmarshal(input, &j.Input); err != nil {
		return nil, fmt.Errorf("%s: job %s input: %w", d.Name, j.ID, err)
	}
	if searches != nil {
		if err := json.Unmarshal(searches, &j.Searches); err != nil {
			return nil, fmt.Errorf("%s: job %s searches: %w", d.Name, j.ID, err)
		}
	}
	if results != nil {
		j.Results = new(job.Results)
		if err := json.Unmarshal(results, j.Results); err != nil {
			return nil, fmt.Errorf("%s: job %s results: %w", d.Name, j.ID, err)
		}
	}
	return j, nil
}

// scanKey reads keyColumns.
func (d *Dialect) scanKey(row Row) (store.Key, error) {
	var k store.Key
	var created, revoked any
	if err := row.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &created, &revoked, &k.Worker); err != nil {
		return store.Key{}, err
	}
	k.CreatedAt, k.RevokedAt = d.TimeOf(created), d.TimeOf(revoked)
	return k, nil
}

// each calls fn for every row of rows, which fn scans, and closes them.
func each(rows Rows, fn func() error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(); err != nil {
			return err
		}
	}
	return rows.Err()
}
