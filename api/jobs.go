package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

func (s *Server) createPrediction(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, decodeThen(s.cat.NewPredict))
}

func (s *Server) createDesign(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, s.cat.DecodeDesign)
}

func (s *Server) createEmbedding(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, decodeThen(s.cat.NewEmbed))
}

// decodeThen decodes a create body strictly into its request type and validates it.
func decodeThen[Req any](validate func(*Req) (*job.Job, error)) func([]byte) (*job.Job, error) {
	return func(body []byte) (*job.Job, error) {
		var req Req
		if err := catalog.Decode(body, &req); err != nil {
			return nil, err
		}
		return validate(&req)
	}
}

// isJSON reports whether a Content-Type is application/json, with or without parameters.
// Browsers send cross-site forms without a preflight only as text/plain, form or multipart
// bodies, so requiring JSON also keeps other sites from creating jobs through a visitor.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// create is the path every create takes: owner, body within the size cap, validation
// (before anything else, so an invalid request gets its 400 whatever the hardware),
// availability, then one store transaction for idempotency, quotas and retention.
func (s *Server) create(w http.ResponseWriter, r *http.Request, validate func([]byte) (*job.Job, error)) {
	owner, ok := s.requireOwner(w, r)
	if !ok {
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		s.writeProblem(w, r, problem.UnsupportedMediaType, "Send the request body as JSON, with Content-Type: application/json.")
		return
	}
	idemKey, hasKey := r.Header["Idempotency-Key"]
	if hasKey && !validIdempotencyKey(idemKey[0]) {
		s.writeProblem(w, r, problem.Invalid, "Idempotency-Key: must be 1 to 255 printable ASCII characters.")
		return
	}
	// A body announced over the cap is refused before any of it is read: waiting for bytes
	// that will be refused anyway would hold the connection until the read timeout.
	limit := int64(s.cat.Limits.RequestBytes)
	if r.ContentLength > limit {
		s.writeProblem(w, r, problem.TooLarge, fmt.Sprintf("The request body is over the limit of %d bytes.", limit))
		return
	}
	body, err := s.readBody(w, r)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		s.writeProblem(w, r, problem.TooLarge, fmt.Sprintf("The request body is over the limit of %d bytes.", tooLarge.Limit))
		return
	}
	if err != nil {
		s.log.InfoContext(r.Context(), "create: reading the body", "request_id", requestID(r.Context()), "error", err.Error())
		s.writeProblem(w, r, problem.Invalid, bodyError(err))
		return
	}
	j, err := validate(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts := store.CreateOptions{Limits: s.storeLimits()}
	if hasKey {
		sum := sha256.Sum256(append([]byte(r.URL.Path+"\n"), body...))
		opts.IdempotencyKey, opts.RequestHash = idemKey[0], hex.EncodeToString(sum[:])
		// A replay is answered before the availability check: a client retrying a create
		// that went through gets its job even while no worker is live.
		orig, hash, err := s.store.FindIdempotent(r.Context(), owner, opts.IdempotencyKey)
		switch {
		case err == nil && hash != opts.RequestHash:
			s.writeError(w, r, job.ErrIdempotencyReused)
			return
		case err == nil:
			s.answerCreate(w, r, orig, http.StatusOK)
			return
		case !errors.Is(err, job.ErrNotFound):
			s.writeError(w, r, err)
			return
		}
	}
	if err := s.checkAvailable(r.Context(), j); err != nil {
		s.writeError(w, r, err)
		return
	}
	j.ID = job.NewID()
	j.Owner = owner
	j.Status = job.Queued
	j.CreatedAt = s.now().UTC()
	res, err := s.store.CreateJob(r.Context(), j, opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The rows are gone, so their files must go too, even if the caller hangs up now.
	cleanup := context.WithoutCancel(r.Context())
	for _, id := range res.Evicted {
		if err := s.artifacts.DeleteJob(cleanup, id); err != nil {
			s.log.WarnContext(r.Context(), "retention: removing files of an evicted job", "job", id, "error", err.Error())
		}
	}
	status := http.StatusAccepted
	if !res.Created {
		status = http.StatusOK
	}
	s.answerCreate(w, r, res.Job, status)
}

// answerCreate answers a create with its job, held first if the caller asked to wait. The
// job exists whatever happens during the hold, so a failed re-read (the job was deleted or
// evicted meanwhile) answers with the job as created rather than an error that would make
// the client create it again.
//
// Only the rendered job is kept as that fallback, not the job itself, whose input (up to the
// body cap) would otherwise stay in memory for the whole hold.
func (s *Server) answerCreate(w http.ResponseWriter, r *http.Request, j *job.Job, status int) {
	sum := store.SummaryOf(j)
	view := s.jobDetail(r.Context(), sum)
	warnings, err := s.warningsOf(r.Context(), j)
	if err != nil {
		s.log.WarnContext(r.Context(), "create: working out warnings", "job", j.ID, "error", err.Error())
	}
	view.Warnings = warnings
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	s.hold(w, r, sum, func(w http.ResponseWriter, r *http.Request, final *store.JobSummary, held bool, err error) {
		if err == nil && held {
			view = s.jobDetail(r.Context(), final)
			view.Warnings = warnings
		}
		if held {
			w.Header().Set("Preference-Applied", "wait")
		}
		writeJSON(w, status, view)
	})
}

// bodyReadTimeout bounds how long a client may take to send a create's body, so a client
// trickling bytes cannot hold a connection and its buffers indefinitely.
const bodyReadTimeout = 2 * time.Minute

// readBody reads a create's body within the size cap and the read timeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	// Not every ResponseWriter supports deadlines (httptest's does not); the size cap
	// still holds there.
	if err := rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)); err == nil {
		defer rc.SetReadDeadline(time.Time{})
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cat.Limits.RequestBytes)))
}

func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func (s *Server) storeLimits() store.Limits {
	l := s.cat.Limits
	return store.Limits{
		ActivePerOwner:    l.ActiveJobsPerOwner,
		CreatesPerMinute:  l.CreatesPerMinute,
		QueuedServiceWide: l.QueuedJobs,
		Retained:          l.RetainedJobs,
	}
}

// liveSet is what the live workers can run, and what they say is missing.
type liveSet struct {
	workers int
	models  map[string]bool
	missing map[string]string
}

func (s *Server) liveModels(ctx context.Context) (liveSet, error) {
	ws, err := s.store.LiveWorkers(ctx, s.now().Add(-s.workerTTL))
	if err != nil {
		return liveSet{}, err
	}
	set := liveSet{workers: len(ws), models: map[string]bool{}, missing: map[string]string{}}
	for _, w := range ws {
		for _, m := range w.Models {
			set.models[m] = true
		}
		// Workers may disagree on why they cannot run a model; the first in the store's
		// order that says why is the one shown, so the answer is the same on every call.
		for m, why := range w.Missing {
			if _, seen := set.missing[m]; !seen {
				set.missing[m] = why
			}
		}
	}
	return set, nil
}

// unavailable says why no live worker can run model, or "" when one can. Its words are
// the catalog's unavailable_reason and the 503's detail alike.
func (l liveSet) unavailable(model string) string {
	reported, known := l.missing[model]
	switch {
	case l.models[model]:
		return ""
	case l.workers == 0:
		return "no worker is connected"
	case known:
		return strings.TrimSuffix(reported, ".")
	default:
		return "no live worker offers it"
	}
}

// checkAvailable is the 503 of decisions "Compute availability": its detail says what an
// operator must do about it.
func (s *Server) checkAvailable(ctx context.Context, j *job.Job) error {
	if !s.awaitStartup(ctx) {
		return errStarting
	}
	live, err := s.liveModels(ctx)
	if err != nil {
		return err
	}
	why := live.unavailable(j.RunModel)
	if why == "" {
		return nil
	}
	what := "model " + j.RunModel
	if j.Protocol != "" {
		what = fmt.Sprintf("model %s (protocol %s)", j.RunModel, j.Protocol)
	}
	return &job.UnavailableError{Reason: fmt.Sprintf("No live worker can run %s: %s.", what, why)}
}

func (s *Server) requireOwner(w http.ResponseWriter, r *http.Request) (job.Owner, bool) {
	o, err := s.owner(r)
	if errors.Is(err, errBadKey) {
		s.writeProblem(w, r, problem.Unauthorized, "The API key is not valid: it is unknown, revoked or malformed. Send a valid key, or none.")
		return job.Owner{}, false
	}
	if err != nil {
		s.writeError(w, r, err)
		return job.Owner{}, false
	}
	return o, true
}

// jobOfPath is the owner of the request and the job id of the path; an id that cannot be
// a job's is not found.
func (s *Server) jobOfPath(w http.ResponseWriter, r *http.Request) (string, job.Owner, bool) {
	owner, ok := s.requireOwner(w, r)
	if !ok {
		return "", owner, false
	}
	id := r.PathValue("id")
	if !job.ValidID(id) {
		s.writeError(w, r, job.ErrNotFound)
		return "", owner, false
	}
	return id, owner, true
}

// ownedJob reads the summary of the job of the path for its owner; another owner's job is
// not found. A summary leaves out the input and the results, which a job view never shows.
func (s *Server) ownedJob(w http.ResponseWriter, r *http.Request) (*store.JobSummary, bool) {
	return readOwned(s, w, r, s.store.GetJobSummary, func(j *store.JobSummary) job.Owner { return j.Owner })
}

// wholeJob is ownedJob for the endpoints that show results.
func (s *Server) wholeJob(w http.ResponseWriter, r *http.Request) (*job.Job, bool) {
	return readOwned(s, w, r, s.store.GetJob, func(j *job.Job) job.Owner { return j.Owner })
}

func readOwned[J any](s *Server, w http.ResponseWriter, r *http.Request,
	read func(context.Context, string) (J, error), owner func(J) job.Owner) (J, bool) {
	var none J
	id, requester, ok := s.jobOfPath(w, r)
	if !ok {
		return none, false
	}
	j, err := read(r.Context(), id)
	if err == nil && owner(j) != requester {
		err = job.ErrNotFound
	}
	if err != nil {
		s.writeError(w, r, err)
		return none, false
	}
	return j, true
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, ok := s.ownedJob(w, r)
	if !ok {
		return
	}
	s.hold(w, r, j, func(w http.ResponseWriter, r *http.Request, final *store.JobSummary, held bool, err error) {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if held {
			w.Header().Set("Preference-Applied", "wait")
		}
		writeJSON(w, http.StatusOK, s.jobDetail(r.Context(), final))
	})
}

// preferWait reads Prefer: wait (RFC 7240) as decisions say: bare wait holds def seconds,
// wait=N holds min(N, max); a malformed or negative value means no hold.
func preferWait(values []string, def, maxSeconds int) (time.Duration, bool) {
	for _, v := range values {
		for _, pref := range strings.Split(v, ",") {
			name, val, hasVal := strings.Cut(strings.TrimSpace(pref), "=")
			if !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			if !hasVal {
				return time.Duration(def) * time.Second, true
			}
			n, ok := parseInt(strings.Trim(strings.TrimSpace(val), `"`))
			if !ok || n < 0 {
				return 0, false
			}
			return time.Duration(min(n, maxSeconds)) * time.Second, n > 0
		}
	}
	return 0, false
}

// parseInt reads a decimal integer. One too large for an int is still an integer, and the
// callers clamp it: it comes back as the largest (or smallest) int rather than as an error.
func parseInt(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return n, true // Atoi saturates at the bound on overflow
	}
	return n, err == nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	owner, ok := s.requireOwner(w, r)
	if !ok {
		return
	}
	limit := s.cat.Limits.ListDefault
	if v := r.URL.Query().Get("limit"); v != "" {
		n, ok := parseInt(v)
		if !ok {
			s.writeError(w, r, job.Invalid("limit", "must be an integer from 1 to %d, got %q", s.cat.Limits.ListMax, v))
			return
		}
		limit = min(max(n, 1), s.cat.Limits.ListMax)
	}
	page, err := s.store.ListJobs(r.Context(), owner, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]jobJSON, len(page.Jobs))
	for i, j := range page.Jobs {
		views[i] = jobView(j)
	}
	var next *string
	if page.NextCursor != "" {
		next = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, listJSON{Object: "list", Data: views, HasMore: next != nil, NextCursor: next})
}

// cancelJob and deleteJob need no read of their own: the store checks the owner in the
// same write, and another owner's job is not found there either. A cancel reads the job
// first all the same, to close the run log of an attempt it ends.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	id, owner, ok := s.jobOfPath(w, r)
	if !ok {
		return
	}
	before, err := s.store.GetJobSummary(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := s.store.CancelJob(r.Context(), id, owner, s.now().UTC())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if before.Status == job.Running {
		s.endCanceledAttempt(r.Context(), j)
	}
	writeJSON(w, http.StatusOK, jobView(j))
}

// endCanceledAttempt ends the run log of the attempt a cancel stopped with the line that
// says so: its worker learns of the cancel at its next heartbeat, and the server refuses
// its writes from then on. (Two cancels at the same moment may both write it.)
func (s *Server) endCanceledAttempt(ctx context.Context, j *store.JobSummary) {
	line := fmt.Sprintf("== chaperone: attempt %d canceled by its owner; the job stops ==\n", j.Attempt)
	if err := artifact.EndLog(context.WithoutCancel(ctx), s.artifacts, j.ID, j.Attempt, line); err != nil {
		s.log.WarnContext(ctx, "cancel: closing the run log", "job", j.ID, "error", err.Error())
	}
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	id, owner, ok := s.jobOfPath(w, r)
	if !ok {
		return
	}
	// Deleting the row is what stops a running job: its worker's next heartbeat finds the
	// lease gone and kills the process tree.
	if _, err := s.store.DeleteJob(r.Context(), id, owner); err != nil {
		s.writeError(w, r, err)
		return
	}
	// The row is gone, so its files must go too, even if the caller hangs up now.
	if err := s.artifacts.DeleteJob(context.WithoutCancel(r.Context()), id); err != nil {
		s.log.WarnContext(r.Context(), "delete: removing job files", "job", id, "error", err.Error())
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "job", "id": id, "deleted": true})
}

// jobJSON is the Job resource of interface §2.1.
type jobJSON struct {
	Object       string         `json:"object"`
	ID           string         `json:"id"`
	Kind         job.Kind       `json:"kind"`
	Status       job.Status     `json:"status"`
	Name         string         `json:"name"`
	Model        *string        `json:"model"`
	Protocol     *string        `json:"protocol"`
	Progress     *float64       `json:"progress"`
	Stage        *string        `json:"stage"`
	Done         int            `json:"done"`
	Total        int            `json:"total"`
	Params       map[string]any `json:"params"`
	Error        *string        `json:"error"`
	CreatedAt    *string        `json:"created_at"`
	StartedAt    *string        `json:"started_at"`
	FinishedAt   *string        `json:"finished_at"`
	ResultsReady bool           `json:"results_ready"`
	Links        jobLinks       `json:"links"`
	// The rest appear only on one job's own view (jobDetail), and only where they apply.
	WaitingForDevice bool         `json:"waiting_for_device,omitempty"`
	Queue            *queueJSON   `json:"queue,omitempty"`
	Partial          *partialJSON `json:"partial,omitempty"`
	Warnings         []string     `json:"warnings,omitempty"`
}

type jobLinks struct {
	Self    string `json:"self"`
	Results string `json:"results"`
	Archive string `json:"archive"`
	Logs    string `json:"logs"`
}

type listJSON struct {
	Object     string    `json:"object"`
	Data       []jobJSON `json:"data"`
	HasMore    bool      `json:"has_more"`
	NextCursor *string   `json:"next_cursor"`
}

func jobView(j *store.JobSummary) jobJSON {
	self := "/v1/jobs/" + j.ID
	params := j.Params
	if params == nil {
		params = map[string]any{}
	}
	v := jobJSON{
		Object:       "job",
		ID:           j.ID,
		Kind:         j.Kind,
		Status:       j.Status,
		Name:         j.Name,
		Model:        nonEmpty(j.Model),
		Protocol:     nonEmpty(j.Protocol),
		Progress:     j.Progress,
		Stage:        nonEmpty(j.Stage),
		Done:         j.Done,
		Total:        j.Total,
		Params:       params,
		Error:        nonEmpty(j.Error),
		CreatedAt:    timestamp(j.CreatedAt),
		StartedAt:    timestamp(j.StartedAt),
		FinishedAt:   timestamp(j.FinishedAt),
		ResultsReady: j.ResultsReady,
		Links:        jobLinks{Self: self, Results: self + "/results", Archive: self + "/archive", Logs: self + "/logs"},
	}
	if j.Status == job.Running && j.Stage == job.StageScheduler {
		showWaitingInScheduler(&v)
	}
	return v
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// timestamp renders RFC 3339 UTC with Z, to the millisecond.
func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Errorf("encoding a response: %w", err)) // recovered into a 500 problem
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
