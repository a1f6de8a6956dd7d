package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/aligner"
)

// alignFlags are serve's settings of the alignment stage: where it searches (a server, or
// local MMseqs2 databases), how many searches run at once, and the shared cache's bounds.
type alignFlags struct {
	server, local, localDB, localEnvDB *string
	searches                           *int
	maxAge                             *time.Duration
	maxBytes                           *int64
}

func newAlignFlags(fs *flag.FlagSet) (alignFlags, error) {
	f := alignFlags{
		server: fs.String("msa-server", env("CHAPERONE_MSA_SERVER", align.DefaultServer),
			"ColabFold-compatible MMseqs2 server that the alignment stage sends protein sequences of jobs with use_msa_server to; "+
				"the default is the public server: self-host one, or search locally (--msa-local), to keep sequences private (CHAPERONE_MSA_SERVER)"),
		local: fs.String("msa-local", env("CHAPERONE_MSA_LOCAL", ""),
			"search alignments on this machine with MMseqs2 (the mmseqs command) against the databases in this folder instead of a server: no sequence leaves it (CHAPERONE_MSA_LOCAL)"),
		localDB: fs.String("msa-local-db", env("CHAPERONE_MSA_LOCAL_DB", "uniref30"),
			"with --msa-local: the name of the main database in the folder (CHAPERONE_MSA_LOCAL_DB)"),
		localEnvDB: fs.String("msa-local-envdb", env("CHAPERONE_MSA_LOCAL_ENVDB", ""),
			"with --msa-local: the name of an environmental database in the folder, searched after the main one, as ColabFold does (CHAPERONE_MSA_LOCAL_ENVDB)"),
		searches: fs.Int("msa-searches", envInt("CHAPERONE_MSA_SEARCHES", 4),
			"jobs whose alignments this server searches at once (CHAPERONE_MSA_SEARCHES)"),
	}
	f.maxAge = fs.Duration("msa-cache-max-age", envDuration("CHAPERONE_MSA_CACHE_MAX_AGE", aligner.DefaultMaxAge),
		"how long a searched alignment is kept in the shared cache (the artifact store) and reused (CHAPERONE_MSA_CACHE_MAX_AGE)")
	var err error
	f.maxBytes, err = bytesFlag(fs, "msa-cache-max-bytes", "CHAPERONE_MSA_CACHE_MAX_BYTES", aligner.DefaultMaxBytes,
		"bytes of compressed alignments the shared cache keeps; beyond, the oldest go")
	return f, err
}

// searcher is the searcher the flags name: a local MMseqs2 with --msa-local, else the
// server of --msa-server.
func (f alignFlags) searcher() (align.Searcher, error) {
	if *f.searches < 1 {
		return nil, fmt.Errorf("--msa-searches: want 1 or more, got %d", *f.searches)
	}
	if *f.maxAge <= 0 {
		return nil, fmt.Errorf("--msa-cache-max-age: want a positive duration, got %s", *f.maxAge)
	}
	if *f.local != "" {
		l, err := align.NewLocal(align.LocalConfig{Dir: *f.local, DB: *f.localDB, EnvDB: *f.localEnvDB})
		if err != nil {
			return nil, fmt.Errorf("--msa-local: %w", err)
		}
		return l, nil
	}
	url, err := msaServerURL(*f.server)
	if err != nil {
		return nil, err
	}
	// Credentials come from the environment only, never from a flag that ps shows.
	return align.NewRemote(align.RemoteConfig{URL: url, UserAgent: "chaperone/" + release(buildInfo()),
		Username: env("CHAPERONE_MSA_SERVER_USERNAME", ""), Password: env("CHAPERONE_MSA_SERVER_PASSWORD", ""),
		APIKeyHeader: env("CHAPERONE_MSA_API_KEY_HEADER", ""), APIKey: env("CHAPERONE_MSA_API_KEY", "")})
}

func (f alignFlags) cacheLimits() aligner.Limits {
	return aligner.Limits{MaxAge: *f.maxAge, MaxBytes: *f.maxBytes}
}
