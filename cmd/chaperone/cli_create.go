package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chaperone-bio/chaperone/client"
)

// createFlags are the flags every create shares.
type createFlags struct {
	name, idemKey string
	params        map[string]any
	wait          bool
	out           string
}

func (f *createFlags) register(fs *flag.FlagSet) {
	f.params = map[string]any{}
	fs.StringVar(&f.name, "name", "", "a label for the job")
	fs.Func("param", "KEY=VALUE: a model parameter (the value is read as JSON when it is JSON); repeatable; see chaperone models", func(v string) error {
		return parseParam(f.params, v)
	})
	fs.StringVar(&f.idemKey, "idempotency-key", "", "name this request, so that running the command again returns the same job (default: a fresh key, kept across retries)")
	fs.BoolVar(&f.wait, "wait", false, "wait for the job to end, showing its progress; exit 1 if it fails")
	fs.StringVar(&f.out, "out", "", "when the job succeeds, save everything it produced into `DIR` (implies --wait)")
}

// create submits a prediction, design or embedding, then optionally waits and downloads.
func create(ctx context.Context, inv *invocation, args []string) error {
	kind := inv.path[len(inv.path)-1].name
	var (
		cf    createFlags
		model string
		// predict
		sequence, input string
		targets         []string
		// design
		protocol, spec, structure, contig string
		// embed
		pool, format string
	)
	fs := inv.clientFlagSet()
	cf.register(fs)
	switch kind {
	case "predict":
		fs.StringVar(&model, "model", "", "prediction model (default: the server's, boltz2)")
		fs.StringVar(&sequence, "sequence", "", "one protein chain, as one-letter codes")
		fs.StringVar(&input, "input", "", "a FASTA or Boltz YAML `FILE` (- for standard input)")
		fs.Func("target", "a FASTA or YAML `FILE`, one target of a multi-target job, named after the file; repeatable", func(v string) error {
			targets = append(targets, v)
			return nil
		})
	case "design":
		fs.StringVar(&protocol, "protocol", "", "design protocol, such as protein-anything or rfd3-binder (see chaperone models)")
		fs.StringVar(&model, "model", "", "design model; optional, the protocol implies it")
		fs.StringVar(&spec, "spec", "", "the design spec YAML `FILE` of a BoltzGen protocol")
		fs.StringVar(&structure, "structure", "", "the PDB or mmCIF `FILE`: the target of an rfd3 protocol, or the file a BoltzGen spec names")
		fs.StringVar(&contig, "contig", "", "the contig of an rfd3 protocol, such as A1-80,60-100")
	case "embed":
		fs.StringVar(&model, "model", "", "embedding model (default: the server's, esmc-600m)")
		fs.StringVar(&sequence, "sequence", "", "one protein sequence")
		fs.StringVar(&input, "input", "", "a FASTA `FILE` of sequences (- for standard input)")
		fs.StringVar(&pool, "pool", "", "pooling: mean, max or cls")
		fs.StringVar(&format, "format", "", "file format: npz or parquet")
	}
	cl, _, err := inv.connect(fs, args)
	if err != nil {
		return err
	}
	opts := &client.CreateOptions{IdempotencyKey: cf.idemKey}
	if pool != "" {
		cf.params["pool"] = pool
	}
	if format != "" {
		cf.params["format"] = format
	}
	params := cf.params
	if len(params) == 0 {
		params = nil
	}

	var j *client.Job
	switch kind {
	case "predict":
		req := &client.PredictRequest{Model: model, Name: cf.name, Sequence: sequence, Params: params}
		if err := oneOf("give one of --sequence, --input and --target", sequence != "", input != "", len(targets) > 0); err != nil {
			return err
		}
		if input != "" {
			if req.Input, err = readInput("input", input); err != nil {
				return err
			}
		}
		for _, path := range targets {
			content, err := readInput("target", path)
			if err != nil {
				return err
			}
			name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			req.Targets = append(req.Targets, client.Target{Name: name, Content: content})
		}
		j, err = cl.c.CreatePrediction(ctx, req, opts)
	case "design":
		req := &client.DesignRequest{Protocol: protocol, Model: model, Name: cf.name, Contig: contig, Params: params}
		switch {
		case protocol == "":
			return usageError{errors.New("design: --protocol is required")}
		case spec == "" && structure == "":
			return usageError{errors.New("design: give --spec (BoltzGen protocols) or --structure with --contig (rfd3 protocols)")}
		}
		if spec != "" {
			if req.Spec, err = readInput("spec", spec); err != nil {
				return err
			}
		}
		if structure != "" {
			if req.Structure, err = readInput("structure", structure); err != nil {
				return err
			}
		}
		j, err = cl.c.CreateDesign(ctx, req, opts)
	case "embed":
		if err := oneOf("give one of --sequence and --input", sequence != "", input != ""); err != nil {
			return err
		}
		req := &client.EmbedRequest{Model: model, Name: cf.name, Sequence: sequence, Params: params}
		if input != "" {
			if req.Input, err = readInput("input", input); err != nil {
				return err
			}
		}
		j, err = cl.c.CreateEmbedding(ctx, req, opts)
	}
	if err != nil {
		return err
	}
	if !cf.wait && cf.out == "" {
		return cl.showJob(j)
	}
	if !cl.json {
		fmt.Fprintf(cl.stderr, "created job %s\n", j.ID)
	}
	return cl.waitAndSave(ctx, j.ID, cf.out)
}

// oneOf is a usage error unless exactly one of given is true.
func oneOf(msg string, given ...bool) error {
	n := 0
	for _, g := range given {
		if g {
			n++
		}
	}
	if n != 1 {
		return usageError{errors.New(msg)}
	}
	return nil
}

// waitAndSave waits for the job with a progress display, shows how it ended, and when it
// succeeded and out is set, saves its files there.
func (cl *cli) waitAndSave(ctx context.Context, id, out string) error {
	p := cl.newProgress()
	j, err := cl.c.Wait(ctx, id, p.update)
	p.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(cl.stderr, "stopped waiting; the job goes on: chaperone jobs wait %s\n", id)
		}
		return err
	}
	if err := outcome(j); err != nil {
		if err := cl.showJob(j); err != nil {
			return err
		}
		return err
	}
	if out != "" {
		if err := cl.saveAll(ctx, j.ID, out); err != nil {
			return err
		}
	}
	return cl.showJob(j)
}
