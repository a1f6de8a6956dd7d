// Package bio reads the biological text formats that chaperone accepts from callers and
// turns prediction inputs into one normalised form, the Complex, that every prediction
// engine translates from. Formats: FASTA (plain, or with Boltz's >ID|TYPE|MSA headers),
// Boltz's input YAML (its whole schema, read with positioned errors), protein, DNA and RNA
// sequences, SMILES syntax, inline alignments (A3M and Boltz's CSV), rfd3 contig strings
// (checked against a structure), PDB and mmCIF structure text (chains, residues and their
// polymer kinds, for design inputs), and BoltzGen design specs in their two forms;
// Complexes reads a stored prediction job's input into its targets. It only parses and
// checks; it knows nothing of HTTP, models or the catalog, imports only job (for the input
// and error types) and the YAML parser, and never reads a file an input names.
//
// The Boltz YAML is read one part of its schema to a file, boltzyaml.go the top level and
// boltzentities.go, boltzconstraints.go, boltztemplates.go and boltzproperties.go the
// lists it holds, on the positioned YAML reader of yamlreader.go that the design specs
// share.
package bio
