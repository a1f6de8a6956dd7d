package pydriver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/job"
)

// embedParams are an embedding job's params, with the catalog's defaults.
type embedParams struct {
	Pool   string `json:"pool"`
	Format string `json:"format"`
	Fast   bool   `json:"fast"`
}

// The length buckets of an embedding job: each is one forward pass. Sequences are taken
// longest first; a bucket holds those at least bucketRatio as long as its longest, so
// padding wastes at most a quarter of a pass, and at most tokenBudget padded tokens (the
// two boundary tokens included), so that a pass of long sequences fits in memory. A
// proteome in chunks of 50 typically costs two to five passes a job.
const (
	bucketRatio = 0.75
	tokenBudget = 32768
)

// buckets returns the batches of sequence indexes, longest sequences first.
func buckets(seqs []job.NamedSequence) [][]int {
	order := make([]int, len(seqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(seqs[b].Sequence), len(seqs[a].Sequence)) })
	var out [][]int
	var longest int
	for _, i := range order {
		n := len(seqs[i].Sequence)
		last := len(out) - 1
		if last < 0 || float64(n) < bucketRatio*float64(longest) || (len(out[last])+1)*(longest+2) > tokenBudget {
			out = append(out, []int{i})
			longest = n
			continue
		}
		out[last] = append(out[last], i)
	}
	return out
}

// embedRequest is the driver's embed request (driver.py).
type embedRequest struct {
	Op         string              `json:"op"`
	Model      map[string]any      `json:"model"`
	Pool       string              `json:"pool"`
	PerResidue bool                `json:"per_residue"`
	Sequences  []job.NamedSequence `json:"sequences"`
	Batches    [][]int             `json:"batches"`
}

// parquetFile is the file of a parquet-format job.
const parquetFile = "embeddings.parquet"

// embeddingRow is one row of embeddings.parquet (decisions: Results).
type embeddingRow struct {
	ID     string    `parquet:"id"`
	Length int32     `parquet:"length"`
	Pooled []float32 `parquet:"pooled,list"`
}

// embed runs an embedding job: the whole job is one request, its sequences in length
// buckets, and each sequence's vectors are written as soon as they arrive.
func (e *Engine) embed(ctx context.Context, run *engine.Run, ch channel, m model) (*engine.Output, error) {
	p := embedParams{Pool: "mean", Format: "npz"}
	if err := toolkit.DecodeParams(run.Job.Params, &p); err != nil {
		return nil, err
	}
	seqs := run.Job.Input.Sequences
	out := &engine.Output{Embedding: &job.Embedding{Model: run.Job.Model, Pool: p.Pool, Format: p.Format, DModel: m.dModel,
		Sequences: make([]job.EmbeddedSequence, len(seqs))}}
	rows := make([]embeddingRow, len(seqs))
	seen := make([]bool, len(seqs))
	req := embedRequest{Op: "embed", Model: m.spec(p.Fast, run.Tools), Pool: p.Pool, PerResidue: p.Format == "npz",
		Sequences: seqs, Batches: buckets(seqs)}
	fmt.Fprintf(run.Log, "== chaperone: %d sequence(s) of %s in %d length bucket(s) ==\n", len(seqs), m.id, len(req.Batches))
	run.Report(job.Progress{Stage: job.StageEmbedding, Total: len(seqs)})
	done, err := exchange(ctx, run, ch, req, func(ev *event) error {
		switch ev.Event {
		case "progress":
			run.Report(job.Progress{Stage: job.StageEmbedding, Done: ev.Done, Total: len(seqs)})
		case "embedding":
			if ev.Index < 0 || ev.Index >= len(seqs) || seen[ev.Index] {
				return fmt.Errorf("the driver sent sequence index %d twice or out of range", ev.Index)
			}
			seen[ev.Index] = true
			s := seqs[ev.Index]
			if ev.Length != len(s.Sequence) || ev.DModel != m.dModel {
				return fmt.Errorf("the driver embedded sequence %s as %d×%d; want %d residues × d_model %d",
					s.ID, ev.Length, ev.DModel, len(s.Sequence), m.dModel)
			}
			file, err := writeEmbedding(run.WorkDir, s, ev, p.Format == "npz", &rows[ev.Index])
			if err != nil {
				return err
			}
			out.Embedding.Sequences[ev.Index] = job.EmbeddedSequence{ID: s.ID, Length: len(s.Sequence), File: file}
			if file != parquetFile {
				out.Files = append(out.Files, toolkit.Artifact(file, s.ID, job.ArtifactEmbedding, filepath.Join(run.WorkDir, file)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(run.Log, "== chaperone: embedded %d sequence(s) in %d forward pass(es) ==\n", len(seqs), done.Passes)
	if i := slices.Index(seen, false); i >= 0 {
		return nil, fmt.Errorf("the driver finished without embedding sequence %s", seqs[i].ID)
	}
	if p.Format == "parquet" {
		path := filepath.Join(run.WorkDir, parquetFile)
		if err := writeParquet(path, rows, m.dModel); err != nil {
			return nil, err
		}
		// The file holds every sequence; it belongs to the target named after it.
		out.Files = append(out.Files, toolkit.Artifact(parquetFile, "embeddings", job.ArtifactTable, path))
	}
	manifest, err := writeManifest(run.WorkDir, out.Embedding)
	if err != nil {
		return nil, err
	}
	out.Files = append(out.Files, manifest)
	return out, nil
}

// manifestFile describes the job's embedding files, for a reader of the archive that has
// no results.json at hand: the reference service ships the same file.
const manifestFile = "manifest.json"

// manifestSequence is one sequence of manifest.json: its file and the shapes of the
// arrays it holds there.
type manifestSequence struct {
	ID     string           `json:"id"`
	Length int              `json:"length"`
	File   string           `json:"file"`
	Arrays map[string][]int `json:"arrays"`
}

// writeManifest writes manifest.json: model, pool, format, d_model, the dtype of every
// vector (float32) and, per sequence, its file and array shapes (per_residue [length,
// d_model] and pooled [d_model] in an npz; pooled alone in the parquet table).
func writeManifest(dir string, e *job.Embedding) (engine.File, error) {
	seqs := make([]manifestSequence, len(e.Sequences))
	for i, s := range e.Sequences {
		arrays := map[string][]int{"pooled": {e.DModel}}
		if e.Format == "npz" {
			arrays["per_residue"] = []int{s.Length, e.DModel}
		}
		seqs[i] = manifestSequence{ID: s.ID, Length: s.Length, File: s.File, Arrays: arrays}
	}
	b, err := json.MarshalIndent(map[string]any{"model": e.Model, "pool": e.Pool, "format": e.Format,
		"d_model": e.DModel, "dtype": "float32", "sequences": seqs}, "", "  ")
	if err != nil {
		return engine.File{}, err
	}
	path := filepath.Join(dir, manifestFile)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return engine.File{}, err
	}
	return toolkit.Artifact(manifestFile, "embeddings", job.ArtifactTable, path), nil
}

// writeEmbedding writes one sequence's vectors: its npz file, or its parquet row (written
// with the others at the end). It returns the file that holds them.
func writeEmbedding(dir string, s job.NamedSequence, ev *event, perResidue bool, row *embeddingRow) (string, error) {
	l, d := ev.Length, ev.DModel
	if !perResidue {
		pooled, err := ev.floats(0, d)
		if err != nil {
			return "", err
		}
		*row = embeddingRow{ID: s.ID, Length: int32(l), Pooled: pooled}
		return parquetFile, nil
	}
	residues, err := ev.floats(0, l*d)
	if err != nil {
		return "", err
	}
	pooled, err := ev.floats(l*d, d)
	if err != nil {
		return "", err
	}
	file := s.ID + ".npz"
	err = npy.WriteNPZ(filepath.Join(dir, file), map[string]*npy.Array{
		"per_residue": {Shape: []int{l, d}, Data: residues},
		"pooled":      {Shape: []int{d}, Data: pooled},
		"sequence":    {Shape: []int{}, Data: []string{s.Sequence}},
	})
	return file, err
}

// writeParquet writes the pooled vectors, one row per sequence in job order. Every pooled
// list holds exactly d_model values; the file's metadata says d_model too.
func writeParquet(path string, rows []embeddingRow, dModel int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[embeddingRow](f, parquet.KeyValueMetadata("d_model", fmt.Sprint(dModel)))
	if _, err := w.Write(rows); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", parquetFile, err)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", parquetFile, err)
	}
	return f.Close()
}
