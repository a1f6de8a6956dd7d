// Package align searches the multiple sequence alignments (MSAs) of a target's protein
// chains ahead of structure prediction, so that no GPU slot waits on a search and no tool
// calls an alignment server itself. It gives what ColabFold's client and Boltz hand their
// models: per distinct chain an unpaired A3M, and for a complex of two or more distinct
// chains paired A3Ms whose row i comes, in every chain, from the same organism.
//
// It imports nothing of chaperone's. Two searchers implement [Searcher]:
//
// # Remote: a ColabFold-compatible server
//
// [Remote] speaks the MMseqs2-App API of api.colabfold.com and of self-hosted
// ColabFold servers, as ColabFold's run_mmseqs2 (colabfold/colabfold.py) and Boltz
// (boltz/data/msa/mmseqs2.py) do. The distinct chains of a target go in one ticket,
// numbered >101, >102, … in order of first appearance:
//
//   - POST /ticket/msa with form fields q (the FASTA) and mode (env, the default, or
//     env-nofilter); its archive's uniref.a3m and bfd.mgnify30.metaeuk30.smag30.a3m hold
//     every query's block, NUL-separated, and a chain's unpaired A3M is its block of the
//     first followed by its block of the second (each starts with the query row, so the
//     query appears twice, as in ColabFold's A3Ms).
//   - POST /ticket/pair, only for two or more distinct chains, with mode pairgreedy (the
//     default, ColabFold's), paircomplete, or either with -env (what Boltz 2.2 asks);
//     its archive's pair.a3m holds every chain's paired block (two per chain with -env).
//
// A ticket is polled at GET /ticket/{id} every RemoteConfig.Poll (default 5 s; ColabFold
// waits 5–10 s) while PENDING or RUNNING, and its archive, a tar.gz, is fetched from GET
// /result/download/{id}. Both tickets of a complex run at once.
//
// Failures are retried, then reported in the server's words: an unreachable server, an
// HTTP 5xx or 429, a ticket answered RATELIMIT, MAINTENANCE, UNKNOWN or ERROR, an answer
// that is not JSON and a malformed archive each count as one failed try, after which the
// ticket is submitted again (the server answers the same ticket for the same query, so a
// search under way or done is not repeated). A search gives up after Retry.Attempts failed
// tries (default 6), waiting Retry.Backoff (default 5 s) after the first and twice as long
// after each next, at most Retry.MaxBackoff (default 1 min): about 2¼ minutes of trouble.
// A 4xx answer to a submission (a query the server refuses) fails at once; one to a poll
// or download (a ticket the server lost) counts as a failed try. Cancelling the context
// stops a search at once.
//
// The public server, api.colabfold.com, which the tools use by default, receives every
// sequence searched there: sequences leave the machine.
//
// # Local: MMseqs2 on this machine
//
// [Local] runs the mmseqs binary (LocalConfig.Mmseqs, default "mmseqs" on PATH; Debian's
// package mmseqs2, version 14-7e284) against databases in a folder, the way ColabFold's
// colabfold_search (colabfold/mmseqs/search.py) does with its default filter, so that no
// sequence leaves the machine. A database is either ColabFold's expandable layout (NAME,
// NAME_seq and NAME_aln: cluster representatives, their members and the alignments between
// them) or a plain sequence database (NAME from mmseqs createdb). With S the database
// searched and T the one alignments are read from (NAME_seq for the expandable layout,
// NAME itself for a plain one), one search runs, in a temporary folder:
//
//	mmseqs createdb query.fasta qdb --shuffle 0 --dbtype 1
//	mmseqs search qdb S res tmp --num-iterations 3 -a -e 0.1 --max-seqs 10000 --k-score seq:96,prof:80
//	mmseqs mvdb tmp/latest/profile_1 prof_res
//	mmseqs lndb qdb_h prof_res_h
//	mmseqs expandaln qdb NAME_seq res NAME_aln res_exp --expansion-mode 0 -e inf --expand-filter-clusters 1 --max-seq-id 0.95  (expandable only)
//	mmseqs align prof_res T res_exp res_exp_realign -e 10 --max-accept 100000 --alt-ali 10 -a
//	mmseqs filterresult qdb T res_exp_realign res_exp_realign_filter --qid 0 --qsc 0.8 --diff 0 --max-seq-id 1.0 --filter-min-enable 100
//	mmseqs result2msa qdb T res_exp_realign_filter uniref.a3m --msa-format-mode 6 --filter-msa 1 --filter-min-enable 1000 --diff 3000 --qid 0.0,0.2,0.4,0.6,0.8,1.0 --qsc 0 --max-seq-id 0.95
//
// (for a plain database res_exp is res). With an environmental database E
// (LocalConfig.EnvDB), it is searched with the profile of the first search, as
// colabfold_search does, and each chain's block of env.a3m follows its block of
// uniref.a3m:
//
//	mmseqs search prof_res E res_env tmp_env (the search parameters above)
//	mmseqs expandaln prof_res E_seq res_env E_aln res_env_exp -e inf --expansion-mode 0  (expandable only)
//	mmseqs align tmp_env/latest/profile_1 TE res_env_exp res_env_exp_realign -e 10 --max-accept 100000 --alt-ali 10 -a
//	mmseqs filterresult, mmseqs result2msa … env.a3m  (as above, on TE)
//
// For two or more distinct chains, when the main database has a taxonomy, the chains
// are paired on the same search, as colabfold_search's pairing does:
//
//	mmseqs expandaln qdb NAME_seq res NAME_aln res_pexp --expansion-mode 0 -e inf --expand-filter-clusters 0 --max-seq-id 0.95  (expandable only)
//	mmseqs align prof_res T res_pexp res_pair_realign -e 0.001 --max-accept 1000000 --alignment-mode 1
//	mmseqs pairaln qdb NAME res_pair_realign res_pair
//	mmseqs align prof_res T res_pair res_pair_bt -e inf -a
//	mmseqs pairaln qdb NAME res_pair_bt res_final
//	mmseqs result2msa qdb T res_final pair.a3m --msa-format-mode 5 --filter-msa 0 --filter-min-enable 1000 --diff 3000 --qid 0.2,0.4,0.6,0.8,1.0 --qsc 0 --max-seq-id 0.95
//
// Every command gets --threads (LocalConfig.Threads, default every core). pairaln of
// MMseqs2 14 keeps, for each chain, its best hit of each taxon that every chain has a hit
// in, ordered by taxon: ColabFold's paircomplete. It has no greedy pairing (pairgreedy
// pairs taxa that only some chains have, padding the others with gap rows); newer MMseqs2
// does, and there Local asks for --pairing-mode 1 to keep to paircomplete. The taxonomy
// pairaln reads is NAME_mapping (a sequence key and its taxon, one pair a line) with
// NAME_taxonomy (or NCBI's nodes.dmp, names.dmp and merged.dmp as NAME_nodes.dmp …);
// without them Local searches a complex's chains unpaired only and says so in its Source.
//
// An operator builds a plain database from a FASTA file of sequences (UniRef100, say):
//
//	mmseqs createdb uniref.fasta DIR/uniref30
//	mmseqs createindex DIR/uniref30 tmp          (optional: faster searches, a large file)
//	mmseqs createtaxdb DIR/uniref30 tmp --ncbi-tax-dump taxdump --tax-mapping-file map.tsv
//
// where taxdump is NCBI's taxdump.tar.gz unpacked and map.tsv maps each sequence's name
// (the first word of its FASTA header) to its taxon; createtaxdb is needed only for paired
// alignments. ColabFold's own databases, in the expandable layout with their taxonomy,
// are built by ColabFold's setup_databases.sh, whose steps for UniRef30 are:
//
//	tar xzf uniref30_2302.tar.gz                       (from opendata.mmseqs.org/colabfold)
//	mmseqs tsv2exprofiledb uniref30_2302 DIR/uniref30_2302_db
//	mmseqs createindex DIR/uniref30_2302_db tmp --remove-tmp-files 1
//
// (setup_databases.sh also unpacks the taxonomy, uniref30_2302_db_mapping and
// uniref30_2302_db_taxonomy), and likewise colabfold_envdb_202108 for the environmental
// database.
package align
