// Package toolkit is what every engine of a command-line tool repeats, so that a new engine
// reads like a filled-in form: a Tool to find and check (Tool), typed params (DecodeParams,
// PredictParams), Python's JSON (ReadPythonJSON), and the steps of a run (Steps, RunSteps)
// with the assembly of prediction results (Target, Predictions). NumPy's npy and npz files
// are in toolkit/npy and the alignment cache in toolkit/msacache.
//
// It imports engine, job and bio; engines import it, never the catalog.
package toolkit
