package e2e

import (
	"archive/zip"
	"bytes"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
)

// This file replays the example requests of the reference service's published docs
// (japanfold/japanfold: SKILL.md and docs/*.md), so that a client written for that service
// keeps working here with only its base URL changed. Each case is our own request, shaped
// as the example it cites; where an example has a placeholder ("<YAML design spec>",
// "MKTAYIAK...") a real input stands in. Differences on purpose are listed in the README's
// compatibility section.

// withEveryStandIn runs boltz2, the ESM and SaProt models, BoltzGen and RFdiffusion3 on
// their real engines, each with its stand-in tool.
func withEveryStandIn(t *testing.T) option {
	python := pydrivertest.Interpreter(t, t.TempDir())
	boltzPath := boltzStandIn(t)
	design := designTools(t)
	return func(c *app.Config) {
		c.Engines = []engine.Engine{boltz.New(boltz.Config{}),
			pydriver.ESM(), pydriver.Transformers(),
			boltzgen.New(boltzgen.Config{Binders: catalog.Default().Binders(), GPU: true}), rfd3.New()}
		c.Tools = engine.Tools{"boltz": boltzPath, "esm": python, "transformers": python}
		maps.Copy(c.Tools, design)
	}
}

// The field types the docs show on a Job (docs/jobs.md, "The Job object") and on results
// (docs/jobs.md "Results", docs/embeddings.md "Results", SKILL.md "Reading results").
var (
	jobFields = map[string]string{
		"object": "string", "id": "string", "kind": "string", "status": "string", "name": "string",
		"model": "string|null", "protocol": "string|null", "progress": "number|null", "stage": "string|null",
		"done": "number", "total": "number", "params": "object", "error": "string|null",
		"created_at": "string", "started_at": "string|null", "finished_at": "string|null",
		"results_ready": "boolean", "links": "object",
	}
	predictResults = map[string]string{"object": "string", "job_id": "string", "kind": "string", "ready": "boolean",
		"rows": "array", "artifacts": "array", "archive_url": "string"}
	designResults = map[string]string{"object": "string", "job_id": "string", "kind": "string", "ready": "boolean",
		"designs": "array", "artifacts": "array", "archive_url": "string"}
	embedResults = map[string]string{"object": "string", "job_id": "string", "kind": "string", "ready": "boolean",
		"model": "string", "pool": "string", "format": "string", "d_model": "number", "sequences": "array",
		"artifacts": "array", "archive_url": "string"}
)

// compatCase is one example request of the docs.
type compatCase struct {
	source  string // the document and section the example comes from
	path    string
	body    map[string]any
	headers []string
	status  int
	// results are the field types of the finished job's results; nil for a request the
	// server refuses.
	results map[string]string
	// detail, for a refused request, is what its problem detail must say.
	detail string
	// params are values the created job's params must show (the docs' clamping and defaults).
	params map[string]any
	// items are the field types each row, design or embedded sequence of the results must
	// have, besides the id every example reads (docs/examples.md: row["id"], d["id"]).
	items map[string]string
}

const (
	docSeq     = "MKTAYIAKQRQISFVKSHFSRQLEE"
	docLongSeq = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"
	insulin    = "sequences:\n  - protein: {id: A, sequence: GIVEQCCTSICSLYQLENYCN}\n  - protein: {id: B, sequence: FVNQHLCGSHLVEALYLVCGERGFFYTPKT}\n"
)

func compatCases() []compatCase {
	skillHeader := "X-JapanFold-Client: skill"
	return []compatCase{
		{source: "SKILL.md, Predict a structure (1. submit, with the skill's client header)", path: "/v1/predictions",
			body:    map[string]any{"model": "boltz2", "name": "mytarget", "sequence": docSeq},
			headers: []string{skillHeader}, status: http.StatusAccepted, results: predictResults},
		{source: "SKILL.md, Multi-chain complexes", path: "/v1/predictions",
			body:    map[string]any{"model": "boltz2", "name": "human-insulin", "input": insulin},
			headers: []string{skillHeader}, status: http.StatusAccepted, results: predictResults},
		{source: "SKILL.md, params: seed and write_pae", path: "/v1/predictions",
			body:   map[string]any{"model": "boltz2", "sequence": docSeq, "params": map[string]any{"seed": 0, "write_pae": true}},
			status: http.StatusAccepted, results: predictResults},
		{source: "SKILL.md, Models: rf3 (a model this server does not offer)", path: "/v1/predictions",
			body: map[string]any{"model": "rf3", "sequence": docSeq}, status: http.StatusBadRequest, detail: "boltz2"},
		{source: "SKILL.md, Models: openbind (a model this server does not offer)", path: "/v1/predictions",
			body: map[string]any{"model": "openbind", "sequence": docSeq}, status: http.StatusBadRequest, detail: "boltz2"},
		{source: "docs/predictions.md, 1. sequence", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "name": "myprotein", "sequence": docSeq}, status: http.StatusAccepted, results: predictResults},
		{source: "docs/predictions.md, 3. targets", path: "/v1/predictions",
			body: map[string]any{"model": "esmfold2-fast", "targets": []any{
				map[string]any{"name": "a", "content": ">a\n" + docSeq}, map[string]any{"name": "b", "content": ">b\nGIVEQCCTSICSLYQLENYCN"}}},
			status: http.StatusAccepted, results: predictResults},
		{source: "docs/predictions.md, Co-folding with a ligand + affinity (the two numbers, their ensemble members, the runtimes)", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "name": "prot-ligand",
				"input": "sequences:\n  - protein: {id: A, sequence: " + docSeq + "}\n  - ligand: {id: L, smiles: \"CC(=O)Oc1ccccc1C(=O)O\"}\nproperties:\n  - affinity: {binder: L}\n"},
			status: http.StatusAccepted, results: predictResults,
			items: map[string]string{"affinity_pred_value": "number", "affinity_probability_binary": "number",
				"affinity_pred_value1": "number", "affinity_probability_binary1": "number", "affinity_pred_value2": "number",
				"affinity_probability_binary2": "number", "affinity_runtime_s": "number", "structure_runtime_s": "number"}},
		{source: "docs/predictions.md, Parameters", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "sequence": docLongSeq,
				"params": map[string]any{"use_msa_server": true, "diffusion_samples": 3, "output_format": "pdb"}},
			status: http.StatusAccepted, results: predictResults},
		{source: "docs/predictions.md, Retrying safely: Idempotency-Key", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "sequence": docLongSeq}, headers: []string{"Idempotency-Key: run-42"},
			status: http.StatusAccepted, results: predictResults},
		{source: "docs/authentication.md, Optional API key (a key this server never issued)", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "sequence": docSeq}, headers: []string{"Authorization: Bearer jf_live_your_key_here"},
			status: http.StatusUnauthorized, detail: "key"},
		{source: "docs/designs.md, BoltzGen (and SKILL.md, Design binders, with model)", path: "/v1/designs",
			body: map[string]any{"model": "boltzgen", "protocol": "nanobody-anything", "name": "my-nanobodies",
				"spec":   "sequences:\n  - protein: {id: A, sequence: " + docLongSeq + "}\n",
				"params": map[string]any{"num_designs": 10, "budget": 10, "fast": true}},
			status: http.StatusAccepted, results: designResults},
		{source: "docs/designs.md, RFdiffusion3 (the contig fitted to the test target's chain A)", path: "/v1/designs",
			body: map[string]any{"model": "rfd3", "protocol": "rfd3-binder", "name": "my-rfd3-binders",
				"structure": designTarget(""), "contig": "A1-51,60-80", "params": map[string]any{"num_designs": 4, "num_timesteps": 100}},
			status: http.StatusAccepted, results: designResults},
		{source: "docs/designs.md, PXDesign (a model this server does not offer)", path: "/v1/designs",
			body: map[string]any{"protocol": "pxdesign-binder", "structure": designTarget(""), "chains": "A",
				"binder_length": 80, "hotspots": "A54,A55,A56", "params": map[string]any{"num_designs": 4, "n_step": 200}},
			status: http.StatusBadRequest, detail: "rfd3-binder"},
		{source: "docs/embeddings.md, 1. sequence (and SKILL.md, Compute protein embeddings)", path: "/v1/embeddings",
			body: map[string]any{"model": "esmc-600m", "sequence": docLongSeq}, headers: []string{skillHeader},
			status: http.StatusAccepted, results: embedResults},
		{source: "docs/embeddings.md, 2. sequences", path: "/v1/embeddings",
			body: map[string]any{"model": "esmc-600m", "sequences": []any{
				map[string]any{"id": "a", "sequence": docSeq}, map[string]any{"id": "b", "sequence": "GIVEQCCTSICSLYQLENYCN"}}},
			status: http.StatusAccepted, results: embedResults},
		{source: "docs/embeddings.md, 3. input", path: "/v1/embeddings",
			body:   map[string]any{"model": "esmc-600m", "input": ">a\n" + docSeq + "\n>b\nGIVEQCCTSICSLYQLENYCN"},
			status: http.StatusAccepted, results: embedResults},
		{source: "docs/embeddings.md, Parameters (the placeholder sequence filled in)", path: "/v1/embeddings",
			body:   map[string]any{"model": "esmc-600m", "sequence": docSeq, "params": map[string]any{"pool": "mean", "format": "npz"}},
			status: http.StatusAccepted, results: embedResults},
		{source: "docs/errors.md, Errors (the problem+json example: an unknown model)", path: "/v1/predictions",
			body: map[string]any{"model": "nope", "sequence": docLongSeq}, status: http.StatusBadRequest, detail: "boltz2"},
		{source: "docs/errors.md, Handling 429 (the request the example retries)", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "sequence": docLongSeq}, status: http.StatusAccepted, results: predictResults},
		{source: "docs/errors.md, Large bodies (an input over max_content_chars, under the body cap)", path: "/v1/predictions",
			body:   map[string]any{"model": "boltz2", "input": ">a\n" + strings.Repeat("A", catalog.DefaultLimits().MaxContentChars)},
			status: http.StatusBadRequest, detail: "max_content_chars"},
		{source: "docs/examples.md, Fold a protein (Python, with its browser-like User-Agent)", path: "/v1/predictions",
			body:    map[string]any{"model": "boltz2", "name": "myprotein", "sequence": docLongSeq},
			headers: []string{"Content-Type: application/json", "User-Agent: Mozilla/5.0"}, status: http.StatusAccepted, results: predictResults},
		{source: "docs/examples.md, Co-fold a protein + ligand, with affinity", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "name": "prot-ligand", "params": map[string]any{"use_msa_server": true},
				"input": "sequences:\n  - protein: {id: A, sequence: " + docLongSeq + "}\n  - ligand: {id: L, smiles: \"CC(=O)Oc1ccccc1C(=O)O\"}\nproperties:\n  - affinity: {binder: L}\n"},
			status: http.StatusAccepted, results: predictResults,
			items: map[string]string{"affinity_pred_value": "number", "affinity_probability_binary": "number"}},
		{source: "docs/examples.md, Design binders (BoltzGen), the protocol without a model", path: "/v1/designs",
			body: map[string]any{"protocol": "nanobody-anything", "name": "my-nanobodies",
				"spec":   "sequences:\n  - protein: {id: A, sequence: " + docLongSeq + "}\n",
				"params": map[string]any{"num_designs": 10, "budget": 10, "fast": true}},
			status: http.StatusAccepted, results: designResults, items: map[string]string{"rank": "number", "sequence": "string"}},
		{source: "docs/examples.md, Design against a structure (RFdiffusion3), the contig fitted to the test target", path: "/v1/designs",
			body: map[string]any{"protocol": "rfd3-binder", "name": "my-rfd3-binders", "structure": designTarget(""),
				"contig": "A1-51,60-80", "params": map[string]any{"num_designs": 4, "num_timesteps": 100}},
			status: http.StatusAccepted, results: designResults},
		{source: "docs/index.md, Fold your first protein in 3 calls", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "name": "myprotein", "sequence": docLongSeq}, status: http.StatusAccepted, results: predictResults},
		{source: "docs/models-and-limits.md, Prediction parameters (every key; out-of-range values clamped)", path: "/v1/predictions",
			body: map[string]any{"model": "boltz2", "sequence": docSeq, "params": map[string]any{"use_msa_server": true, "fast": true,
				"recycling_steps": 11, "sampling_steps": 9, "diffusion_samples": 6, "output_format": "cif"}},
			status: http.StatusAccepted, results: predictResults,
			params: map[string]any{"recycling_steps": 10.0, "sampling_steps": 10.0, "diffusion_samples": 5.0}},
		{source: "docs/models-and-limits.md, Prediction models: esmfold2 with its optional MSA off", path: "/v1/predictions",
			body:   map[string]any{"model": "esmfold2", "sequence": docSeq, "params": map[string]any{"use_msa_server": false}},
			status: http.StatusAccepted, results: predictResults},
		{source: "docs/models-and-limits.md, Limits (over max_residues is a 400)", path: "/v1/predictions",
			body:   map[string]any{"model": "boltz2", "sequence": strings.Repeat("A", catalog.DefaultLimits().ResidueCeiling+1)},
			status: http.StatusBadRequest, detail: "max_residues"},
		{source: "docs/models-and-limits.md, RFdiffusion3 parameters (with seed)", path: "/v1/designs",
			body: map[string]any{"model": "rfd3", "protocol": "rfd3-binder", "structure": designTarget(""), "contig": "A1-51,60-80",
				"params": map[string]any{"num_designs": 5, "num_timesteps": 200, "seed": 42}},
			status: http.StatusAccepted, results: designResults, params: map[string]any{"seed": 42.0}},
		{source: "SKILL.md, BoltzGen seed (BoltzGen offers none to pass)", path: "/v1/designs",
			body: map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - protein: {id: B, sequence: 20..30}\n",
				"params": map[string]any{"seed": 7}},
			status: http.StatusBadRequest, detail: "BoltzGen offers no seed"},
		{source: "docs/models-and-limits.md, Embedding parameters (every key, the other values)", path: "/v1/embeddings",
			body:   map[string]any{"model": "esmc-300m", "sequence": docSeq, "params": map[string]any{"pool": "cls", "format": "parquet", "fast": true}},
			status: http.StatusAccepted, results: embedResults},
		{source: "docs/models-and-limits.md, Embedding models: saprot-1.3b", path: "/v1/embeddings",
			body:   map[string]any{"model": "saprot-1.3b", "sequence": docSeq, "params": map[string]any{"pool": "max"}},
			status: http.StatusAccepted, results: embedResults},
		{source: "SKILL.md, Compute protein embeddings (sequences with ids)", path: "/v1/embeddings",
			body: map[string]any{"model": "saprot-650m", "sequences": []any{
				map[string]any{"id": "gfp", "sequence": "MSKGEELFTGVVPILVELDGDVNGHKFSVSGEGEGDAT"},
				map[string]any{"id": "lysozyme", "sequence": "KVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNF"}}},
			status: http.StatusAccepted, results: embedResults},
	}
}

// TestReplayTheReferenceDocs sends every example request of the docs to a real server
// and checks the status, and the names and JSON types of the fields the docs show, on the
// created job, while polling it (docs/jobs.md, Poll one job, with Prefer: wait), on its
// results, logs and archive (docs/jobs.md, Results, Download artifacts, Logs).
func TestReplayTheReferenceDocs(t *testing.T) {
	t.Parallel()
	s := startServer(t, withEveryStandIn(t))
	for _, tc := range compatCases() {
		r := s.post(tc.path, tc.body, tc.headers...)
		if r.Status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.source, r.Status, tc.status, truncate(r.Body))
			continue
		}
		if tc.results == nil {
			slug := map[int]string{http.StatusBadRequest: "invalid-input", http.StatusUnauthorized: "unauthorized"}[tc.status]
			detail := r.problem(tc.status, slug)
			mustf(t, strings.Contains(detail, tc.detail), "%s: detail %q does not name %q", tc.source, detail, tc.detail)
			continue
		}
		created := r.json()
		checkFields(t, tc.source+": created job", created, jobFields)
		for k, want := range tc.params {
			if got := created["params"].(map[string]any)[k]; got != want {
				t.Errorf("%s: params.%s is %v, want %v", tc.source, k, got, want)
			}
		}
		id := created["id"].(string)
		final := s.waitFor(id, 30*time.Second, func(j map[string]any) bool { return j["status"] != "queued" && j["status"] != "running" }, tc.headers...)
		checkFields(t, tc.source+": finished job", final, jobFields)
		mustf(t, final["status"] == "succeeded" && final["results_ready"] == true, "%s: finished %v", tc.source, final)
		res := s.get("/v1/jobs/"+id+"/results", tc.headers...).expect(http.StatusOK).json()
		checkFields(t, tc.source+": results", res, tc.results)
		for _, a := range res["artifacts"].([]any) {
			checkFields(t, tc.source+": artifact", a.(map[string]any),
				map[string]string{"path": "string", "target": "string", "type": "string", "url": "string"})
		}
		itemFields := map[string]string{"id": "string"}
		maps.Copy(itemFields, tc.items)
		for _, list := range []string{"rows", "designs", "sequences"} {
			items, _ := res[list].([]any)
			for _, item := range items {
				checkFields(t, tc.source+": "+list, item.(map[string]any), itemFields)
			}
		}
		s.get("/v1/jobs/"+id+"/logs", tc.headers...).expect(http.StatusOK)
		archive := s.get(res["archive_url"].(string), tc.headers...).expect(http.StatusOK)
		zr, err := zip.NewReader(bytes.NewReader(archive.Body), int64(len(archive.Body)))
		mustf(t, err == nil, "%s: archive is no zip: %v", tc.source, err)
		if res["kind"] == "embed" {
			// SKILL.md, Compute protein embeddings: "zip: manifest.json + embeddings".
			mustf(t, zipHas(zr, "manifest.json"), "%s: the archive lacks manifest.json", tc.source)
		}
	}
}

func zipHas(zr *zip.Reader, name string) bool {
	for _, f := range zr.File {
		if f.Name == name {
			return true
		}
	}
	return false
}

// checkFields checks that m has each field with the JSON type want names ("string",
// "number", "boolean", "object", "array", "null", or alternatives joined by |).
func checkFields(t *testing.T, what string, m map[string]any, want map[string]string) {
	t.Helper()
	for name, types := range want {
		v, ok := m[name]
		if !ok {
			t.Errorf("%s: no field %s", what, name)
			continue
		}
		if got := jsonType(v); !strings.Contains("|"+types+"|", "|"+got+"|") {
			t.Errorf("%s: field %s is %s (%v), want %s", what, name, got, v, types)
		}
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

// TestSeedReproducesAFold: SKILL.md's seed is echoed on the job and reaches the tool, so
// the same seed gives the same result; write_pae adds <name>_pae.npz.
func TestSeedAndPAEMatrix(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t))
	id := s.create("/v1/predictions", map[string]any{"sequence": docSeq, "params": map[string]any{"seed": 7, "write_pae": true}})
	j := s.waitStatus(id, "succeeded")
	params := j["params"].(map[string]any)
	mustf(t, params["seed"] == 7.0 && params["write_pae"] == true, "params %v: want seed 7 and write_pae echoed", params)
	log := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	mustf(t, strings.Contains(log, "--seed 7"), "the tool was not given the seed:\n%s", log)
	_, arts := s.rowsOf(id)
	var pae map[string]any
	for _, a := range arts {
		if a := a.(map[string]any); a["path"] == "target_1_pae.npz" {
			pae = a
		}
	}
	mustf(t, pae != nil && pae["type"] == "pae", "no target_1_pae.npz of type pae in %v", arts)
	// Omitted, the seed is still shown: the one the job ran with.
	other := s.waitStatus(s.create("/v1/predictions", map[string]any{"sequence": docSeq}), "succeeded")
	mustf(t, other["params"].(map[string]any)["seed"] == 0.0, "default seed not echoed: %v", other["params"])
	// A model without the pae capability refuses write_pae by name.
	detail := s.post("/v1/predictions", map[string]any{"model": "openfold3", "sequence": docSeq,
		"params": map[string]any{"write_pae": true}}).problem(http.StatusBadRequest, "invalid-input")
	mustf(t, strings.Contains(detail, "openfold3") && strings.Contains(detail, "write_pae"), "detail %q", detail)
}

// TestPartialMeasuredWallAndWarnings: a job that delivered less than asked says so
// (partial), GET /v1/models learns the largest input run (measured_wall), and a larger
// input is accepted with a warning (SKILL.md, Limits & notes).
func TestPartialMeasuredWallAndWarnings(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t))
	wall := func() any {
		for _, m := range s.get("/v1/models").expect(http.StatusOK).json()["models"].([]any) {
			if m := m.(map[string]any); m["id"] == "boltz2" {
				return m["measured_wall"]
			}
		}
		return "missing"
	}
	mustf(t, wall() == nil, "measured_wall before any job: %v, want null", wall())
	id := s.create("/v1/predictions", map[string]any{"targets": []any{
		map[string]any{"name": "fine", "content": ">A|protein|empty\n" + docSeq},
		map[string]any{"name": "oom1", "content": ">A|protein|empty\n" + docLongSeq}}})
	j := s.waitStatus(id, "succeeded")
	partial, _ := j["partial"].(map[string]any)
	mustf(t, partial["delivered"] == 1.0 && partial["requested"] == 2.0, "partial %v, want 1 of 2", j["partial"])
	mustf(t, wall() == float64(len(docSeq)), "measured_wall %v, want %d (the target that folded)", wall(), len(docSeq))

	whole := s.waitStatus(s.create("/v1/predictions", map[string]any{"sequence": "MKV"}), "succeeded")
	mustf(t, whole["partial"] == nil, "a whole job shows partial %v", whole["partial"])
	big := s.post("/v1/predictions", map[string]any{"sequence": docLongSeq}).expect(http.StatusAccepted).json()
	warnings, _ := big["warnings"].([]any)
	mustf(t, len(warnings) == 1 && strings.Contains(warnings[0].(string), "measured_wall"), "warnings %v", big["warnings"])
}

// TestAQueuedJobSaysWhyItWaits: docs/jobs.md, The Job object: waiting_for_device and queue
// while nothing is free to run the job.
func TestAQueuedJobSaysWhyItWaits(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	// Both slots run this owner's jobs before the other owner's job is queued: the lease
	// order would otherwise hand the other owner a slot first (fewest running jobs first).
	s.waitStatus(s.predict("hang"), "running")
	s.waitStatus(s.predict("hang"), "running")
	key, _ := s.issueKey("other")
	s.predict("hang", "X-API-Key: "+key)
	waiting := s.predict("ok")
	// The slots count as busy from their leases.
	j := s.waitFor(waiting, 10*time.Second, func(j map[string]any) bool { return j["queue"] != nil })
	mustf(t, j["status"] == "queued" && j["waiting_for_device"] == true, "job %v: want queued and waiting_for_device", j)
	q, _ := j["queue"].(map[string]any)
	checkFields(t, "queue", q, map[string]string{"reason": "string", "accounts_ahead": "number", "chips_busy": "number", "chips_online": "number"})
	mustf(t, q["reason"] == "busy" && q["chips_busy"] == 2.0 && q["chips_online"] == 2.0 && q["accounts_ahead"] == 1.0,
		"queue %v: want busy, 2 of 2 slots, the other owner ahead", q)
	listed := s.get("/v1/jobs").expect(http.StatusOK).json()["data"].([]any)
	mustf(t, listed[0].(map[string]any)["queue"] == nil, "a listing shows queue: %v", listed[0])
}

// TestTheErrorsDocStatusCodes walks docs/errors.md's table of status codes: each is
// answered as problem+json with the status mirrored in the body, and a 429 or 503 carries
// Retry-After in whole seconds, as the doc's retry loop reads it.
func TestTheErrorsDocStatusCodes(t *testing.T) {
	t.Parallel()
	s := startServer(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner = 1 }))
	tests := []struct {
		source     string
		send       func() *response
		status     int
		slug       string
		retryAfter bool
	}{
		{"400, bad params", func() *response {
			return s.post("/v1/predictions", map[string]any{"sequence": docSeq, "params": map[string]any{"diffusion_samples": "two"}})
		}, http.StatusBadRequest, "invalid-input", false},
		{"401, an invalid Bearer key", func() *response {
			return s.post("/v1/predictions", map[string]any{"sequence": docSeq}, "Authorization: Bearer jf_live_never_issued")
		}, http.StatusUnauthorized, "unauthorized", false},
		{"404, no such job", func() *response {
			return s.get("/v1/jobs/0123456789abcdef0123456789abcdef")
		}, http.StatusNotFound, "not-found", false},
		{"404, a job you don't own", func() *response {
			key, _ := s.issueKey("owner")
			id := s.predict("ok", "X-API-Key: "+key)
			return s.get("/v1/jobs/" + id)
		}, http.StatusNotFound, "not-found", false},
		{"413, a body over 8 MiB", func() *response {
			return s.post("/v1/predictions", `{"sequence": "`+strings.Repeat("A", 9<<20)+`"}`)
		}, http.StatusRequestEntityTooLarge, "payload-too-large", false},
		{"429, already at the active-job quota", func() *response {
			key, _ := s.issueKey("busy")
			s.predict("hang", "X-API-Key: "+key)
			return s.post("/v1/predictions", map[string]any{"sequence": docSeq}, "X-API-Key: "+key)
		}, http.StatusTooManyRequests, "rate-limited", true},
		{"503, nothing can run the job (here: no worker offers the model)", func() *response {
			return s.post("/v1/predictions", map[string]any{"model": "protenix-v2", "sequence": docSeq})
		}, http.StatusServiceUnavailable, "unavailable", true},
	}
	for _, tc := range tests {
		r := tc.send()
		mustf(t, r.Status == tc.status, "%s: status %d, want %d: %s", tc.source, r.Status, tc.status, truncate(r.Body))
		r.problem(tc.status, tc.slug)
		if tc.retryAfter {
			retryAfter(t, r)
		}
	}
	// Handling 503: reading jobs and downloading results keep working.
	s.get("/v1/jobs").expect(http.StatusOK)
	// Cloudflare 403 / error 1010: the doc's browser-like User-Agent is just another client.
	s.get("/v1/models", "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36").
		expect(http.StatusOK)
	// Models & limits: GET /v1/health is a plain liveness check.
	checkFields(t, "health", s.get("/v1/health").expect(http.StatusOK).json(),
		map[string]string{"status": "string", "service": "string", "api_version": "string"})
}

// TestTheLimitsDocNames: docs/models-and-limits.md, Limits. GET /v1/models carries each cap
// of this server also under the name that table gives it, with this server's value, so that
// a script reading those names reads the caps in force here. The table's caps this server
// does not have (max_active_jobs service-wide, the cost budget's max_units_*, the byte
// quotas) are left out, as the README says.
func TestTheLimitsDocNames(t *testing.T) {
	t.Parallel()
	s := startServer(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner, l.ResidueCeiling = 3, 900 }))
	limits := s.get("/v1/models").expect(http.StatusOK).json()["limits"].(map[string]any)
	same := map[string]string{
		"max_residues": "residue_ceiling", "max_chains_per_complex": "chains_per_complex",
		"max_ligands_per_complex": "ligands_per_complex", "max_constraints_per_complex": "constraints_per_complex",
		"max_complexes": "targets_per_job", "max_content_chars": "max_content_chars",
		"max_designs": "boltzgen_designs_per_job", "max_budget": "boltzgen_designs_per_job",
		"max_rfd3_designs": "rfd3_designs_per_job", "max_structure_chars": "structure_chars",
		"max_embed_sequences": "embed_sequences_per_job", "max_embed_sequence_residues": "embed_residues_per_sequence",
		"max_active_jobs_per_ip": "active_jobs_per_owner", "max_active_jobs_per_session": "active_jobs_per_owner",
		"max_submits_per_min": "creates_per_owner_per_minute", "max_submits_per_min_per_ip": "creates_per_owner_per_minute",
		"max_retained_jobs": "retained_jobs", "max_runtime_predict_s": "predict_runtime_seconds",
		"max_runtime_design_s": "design_runtime_seconds", "max_runtime_embed_s": "embed_runtime_seconds",
		"max_stall_s": "stall_seconds", "max_stall_design_s": "stall_seconds", "max_stall_embed_s": "stall_seconds",
	}
	for doc, ours := range same {
		mustf(t, limits[doc] != nil && limits[doc] == limits[ours], "limits.%s = %v, want limits.%s = %v", doc, limits[doc], ours, limits[ours])
	}
	mustf(t, limits["max_active_jobs_per_ip"] == 3.0 && limits["max_residues"] == 900.0, "the doc names show the caps in force: %v", limits)
	// The table's parameter ceilings, as the params of GET /v1/models bound them here.
	for doc, want := range map[string]float64{"max_recycling_steps": 10, "max_sampling_steps": 500, "max_diffusion_samples": 5, "max_rfd3_timesteps": 200} {
		mustf(t, limits[doc] == want, "limits.%s = %v, want %v", doc, limits[doc], want)
	}
}
