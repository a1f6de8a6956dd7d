// Package bio reads the biological text formats that chaperone accepts from callers: FASTA,
// protein sequences, rfd3 contig strings, and a first look at PDB or mmCIF structure text.
// It only parses and checks; it knows nothing of jobs, HTTP or the catalog, and imports
// nothing of chaperone's.
package bio
