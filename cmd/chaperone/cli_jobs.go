package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chaperone-bio/chaperone/client"
)

func jobsList(ctx context.Context, inv *invocation, args []string) error {
	fs := inv.clientFlagSet()
	limit := fs.Int("limit", 20, "jobs per page (1 to 100)")
	cursor := fs.String("cursor", "", "the page after the one that printed this cursor")
	all := fs.Bool("all", false, "list every job, all pages")
	cl, _, err := inv.connect(fs, args)
	if err != nil {
		return err
	}
	return cl.list(ctx, *limit, *cursor, *all)
}

func jobsGet(ctx context.Context, inv *invocation, args []string) error {
	cl, id, err := inv.connectToJob(ctx, inv.clientFlagSet(), args)
	if err != nil {
		return err
	}
	j, err := cl.c.GetJob(ctx, id)
	if err != nil {
		return err
	}
	return cl.showJob(j)
}

func jobsWait(ctx context.Context, inv *invocation, args []string) error {
	fs := inv.clientFlagSet()
	out := fs.String("out", "", "when the job succeeds, save everything it produced into `DIR`")
	cl, id, err := inv.connectToJob(ctx, fs, args)
	if err != nil {
		return err
	}
	return cl.waitAndSave(ctx, id, *out)
}

func jobsCancel(ctx context.Context, inv *invocation, args []string) error {
	cl, id, err := inv.connectToJob(ctx, inv.clientFlagSet(), args)
	if err != nil {
		return err
	}
	j, err := cl.c.CancelJob(ctx, id)
	if err != nil {
		return err
	}
	if cl.json {
		return cl.printJSON(j)
	}
	fmt.Fprintf(cl.stdout, "canceled %s\n", j.ID)
	return nil
}

func jobsDelete(ctx context.Context, inv *invocation, args []string) error {
	cl, id, err := inv.connectToJob(ctx, inv.clientFlagSet(), args)
	if err != nil {
		return err
	}
	if err := cl.c.DeleteJob(ctx, id); err != nil {
		return err
	}
	if cl.json {
		return cl.printJSON(map[string]any{"object": "job", "id": id, "deleted": true})
	}
	fmt.Fprintf(cl.stdout, "deleted %s\n", id)
	return nil
}

func jobsResults(ctx context.Context, inv *invocation, args []string) error {
	cl, id, err := inv.connectToJob(ctx, inv.clientFlagSet(), args)
	if err != nil {
		return err
	}
	return cl.results(ctx, id)
}

func jobsLogs(ctx context.Context, inv *invocation, args []string) error {
	fs := inv.clientFlagSet()
	follow := fs.Bool("follow", false, "keep printing new output until the job ends; exit 1 if it fails")
	cl, id, err := inv.connectToJob(ctx, fs, args)
	if err != nil {
		return err
	}
	if *follow {
		j, err := cl.c.FollowLogs(ctx, id, cl.stdout)
		if err != nil {
			return err
		}
		return outcome(j)
	}
	b, err := cl.c.Logs(ctx, id)
	if err != nil {
		return err
	}
	_, err = cl.stdout.Write(b)
	return err
}

func jobsDownload(ctx context.Context, inv *invocation, args []string) error {
	fs := inv.clientFlagSet()
	out := fs.String("out", "", "folder to save into (default ./<job id>)")
	zipOnly := fs.Bool("zip", false, "keep the archive as <job id>.zip instead of unpacking it")
	var selected []string
	fs.Func("artifact", "download only this artifact `PATH` (as the results list it); repeatable", func(v string) error {
		selected = append(selected, v)
		return nil
	})
	cl, id, err := inv.connectToJob(ctx, fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = id
	}
	return cl.download(ctx, id, *out, *zipOnly, selected)
}

// models runs "chaperone models": what the server offers and whether it can run it now.
func models(ctx context.Context, inv *invocation, args []string) error {
	fs := inv.clientFlagSet()
	cl, _, err := inv.connect(fs, args)
	if err != nil {
		return err
	}
	cat, err := cl.c.Models(ctx)
	if err != nil {
		return err
	}
	if cl.json {
		return cl.printJSON(cat)
	}
	tw := tabwriter.NewWriter(cl.stdout, 0, 4, 2, ' ', 0)
	// The reason comes last: it is the longest column, and a terminal that wraps it leaves
	// the others aligned.
	fmt.Fprintln(tw, "MODEL\tKIND\tAVAILABLE\tMAX RESIDUES\tNAME\tREASON")
	for _, m := range cat.Models {
		reason := ""
		if m.UnavailableReason != nil {
			reason = *m.UnavailableReason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, m.Kind, yesNo(m.Available), m.MaxResidues, m.Name, reason)
	}
	fmt.Fprintln(tw, "\nPROTOCOL\tMODEL\tREQUIRES\t\t")
	for _, p := range cat.Protocols {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t\n", p.ID, p.Model, strings.Join(p.Requires, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Whoever reads this table may be the one who runs the workers: say where the rest of
	// the story is.
	if slices.ContainsFunc(cat.Models, func(m client.Model) bool { return !m.Available }) {
		_, err = fmt.Fprintln(cl.stdout, "\nFor what an unavailable model needs on a worker (tool, version, weights, GPU memory), run\n'chaperone doctor' on that machine; the README's \"GPU worker\" section sets each tool up.")
	}
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (cl *cli) list(ctx context.Context, limit int, cursor string, all bool) error {
	var (
		data []*client.Job
		next string
	)
	if all {
		for j, err := range cl.c.Jobs(ctx, 100) {
			if err != nil {
				return err
			}
			data = append(data, j)
		}
	} else {
		page, err := cl.c.ListJobs(ctx, &client.ListOptions{Limit: limit, Cursor: cursor})
		if err != nil {
			return err
		}
		data, next = page.Data, page.NextCursor
	}
	if cl.json {
		return cl.printJSON(client.JobList{Data: data, HasMore: next != "", NextCursor: next})
	}
	tw := tabwriter.NewWriter(cl.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tMODEL\tNAME\tCREATED")
	for _, j := range data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Kind, j.Status, dash(modelOf(j)), dash(j.Name), when(j.CreatedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(cl.stderr, "more: chaperone jobs list --cursor %s (or --all)\n", next)
	}
	return nil
}

// showJob prints a job: JSON, or one field per line.
func (cl *cli) showJob(j *client.Job) error {
	if cl.json {
		return cl.printJSON(j)
	}
	tw := tabwriter.NewWriter(cl.stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("id", j.ID)
	row("kind", string(j.Kind))
	row("status", string(j.Status))
	row("name", j.Name)
	row("model", j.Model)
	row("protocol", j.Protocol)
	row("stage", j.Stage)
	row("progress", progressText(j))
	row("created", when(j.CreatedAt))
	row("started", when(j.StartedAt))
	row("finished", when(j.FinishedAt))
	row("error", j.Error)
	return tw.Flush()
}

// progressText is "42% (3/7)", or the parts of it that are known.
func progressText(j *client.Job) string {
	var parts []string
	if j.Progress != nil {
		parts = append(parts, pct(*j.Progress))
	}
	if j.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d", j.Done, j.Total))
	}
	if len(parts) == 2 {
		return parts[0] + " (" + parts[1] + ")"
	}
	return strings.Join(parts, "")
}

func modelOf(j *client.Job) string {
	if j.Model != "" {
		return j.Model
	}
	return j.Protocol
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func number(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'f', 3, 64)
}

// results prints the manifest: rows, designs or embeddings, then the artifacts.
func (cl *cli) results(ctx context.Context, id string) error {
	r, err := cl.c.Results(ctx, id)
	if err != nil {
		return err
	}
	if cl.json {
		if err := cl.printJSON(r); err != nil {
			return err
		}
	}
	if !r.Ready {
		if r.Status == client.Failed || r.Status == client.Canceled {
			j, err := cl.c.GetJob(ctx, id)
			if err != nil {
				return err
			}
			return outcome(j)
		}
		if !cl.json {
			fmt.Fprintf(cl.stdout, "job %s is %s; its results are not ready yet\n", id, r.Status)
		}
		return nil
	}
	if cl.json {
		return nil
	}
	tw := tabwriter.NewWriter(cl.stdout, 0, 4, 2, ' ', 0)
	switch r.Kind {
	case client.KindPredict:
		fmt.Fprintln(tw, "TARGET\tSTATUS\tPLDDT\tPTM\tIPTM\tCHAINS\tRESIDUES\tSECONDS\tERROR")
		for _, row := range r.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.1f\t%s\n", row.ID, row.Status, number(row.PLDDT), number(row.PTM),
				number(row.IPTM), row.NChains, row.NResidues, row.RuntimeS, row.Error)
		}
	case client.KindDesign:
		fmt.Fprintln(tw, "RANK\tDESIGN\tSEQUENCE\tFILE")
		for _, d := range r.Designs {
			rank := "-"
			if d.Rank != nil {
				rank = strconv.Itoa(*d.Rank)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rank, d.ID, d.Sequence, d.File)
		}
	case client.KindEmbed:
		fmt.Fprintf(tw, "model %s, pool %s, format %s, d_model %d\n\n", r.Model, r.Pool, r.Format, r.DModel)
		fmt.Fprintln(tw, "SEQUENCE\tLENGTH\tFILE")
		for _, s := range r.Sequences {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", s.ID, s.Length, s.File)
		}
	}
	fmt.Fprintln(tw, "\nARTIFACT\tTYPE\tTARGET")
	for _, a := range r.Artifacts {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Path, a.Type, dash(a.Target))
	}
	return tw.Flush()
}

// download saves a job's files: the archive unpacked (or kept with --zip), or the
// selected artifacts.
func (cl *cli) download(ctx context.Context, id, out string, zipOnly bool, selected []string) error {
	j, err := cl.c.GetJob(ctx, id)
	if err != nil {
		return err
	}
	if err := outcome(j); err != nil {
		return err
	}
	if !j.ResultsReady {
		return resultsNotReady{j, out}
	}
	switch {
	case len(selected) > 0:
		err = cl.saveArtifacts(ctx, id, out, selected)
	case zipOnly:
		err = cl.c.DownloadArchive(ctx, id, joinOut(out, id+".zip"))
		if err == nil && !cl.json {
			fmt.Fprintf(cl.stderr, "saved %s\n", joinOut(out, id+".zip"))
		}
	default:
		err = cl.saveAll(ctx, id, out)
	}
	if err != nil || !cl.json {
		return err
	}
	return cl.printJSON(j)
}

// resultsNotReady is a download of a job whose results are not ready yet: exit 2, as
// the server's 409 for it would be.
type resultsNotReady struct {
	j   *client.Job
	out string
}

func (e resultsNotReady) Error() string {
	return fmt.Sprintf("job %s is %s; its results are not ready (chaperone jobs wait %s --out %s)", e.j.ID, e.j.Status, e.j.ID, e.out)
}
