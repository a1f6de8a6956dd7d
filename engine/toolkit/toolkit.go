// Package toolkit is what every engine of a command-line tool repeats, so that a new engine
// reads like a filled-in form:
//
//   - Tool: the upstream command, found as the operator's --tool NAME=PATH or on PATH, and
//     checked (cached) by its --help listing every option the engine passes; its Diagnose
//     with PackageVersion, FileWeights and HFWeights, what an engine tells doctor;
//   - DecodeParams and PredictParams: a job's params in the engine's own struct, integers
//     as ints whether the params come from the catalog or back from the job store;
//   - ReadPythonJSON: the JSON Python's json module writes, NaN and Infinity read as null;
//   - Searched: the alignments the alignment stage searched for a target, or, when they
//     are missing, the job's failure in one wording for every engine;
//   - RunSteps with Plan and Steps: a run as plan, write inputs, run the tool, read
//     results, where the exit status never decides alone;
//   - Target, Artifact and Predictions: each target's typed row and files, gathered into
//     the run's output with the job failing only when every target failed.
//
// NumPy's npy and npz files are in toolkit/npy.
// It imports engine, job, bio and align; engines import it, never the catalog.
package toolkit
