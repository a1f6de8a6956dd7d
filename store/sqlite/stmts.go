package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// stmts are the statements of the hot paths (create, read, list, lease, heartbeat,
// complete, key lookup), prepared once and found by their text, which is how the driver is
// handed a statement. The rest run as plain queries: they are rare enough that parsing
// them each time costs nothing that matters.
type stmts struct {
	reads  map[string]*sql.Stmt // on the readers
	writes map[string]*sql.Stmt // on the writer; used inside transactions through tx.StmtContext
	all    []*sql.Stmt
}

func (st *stmts) prepare(ctx context.Context, w, r *sql.DB) error {
	reads, writes := dialect.HotStatements()
	reads = append(reads, selectKeyEpoch)
	writes = append(writes, insertJob, insertInput, selectJob)
	st.reads, st.writes = map[string]*sql.Stmt{}, map[string]*sql.Stmt{}
	for _, p := range []struct {
		db    *sql.DB
		texts []string
		into  map[string]*sql.Stmt
	}{{r, reads, st.reads}, {w, writes, st.writes}} {
		for _, text := range p.texts {
			if p.into[text] != nil {
				continue
			}
			s, err := p.db.PrepareContext(ctx, text)
			if err != nil {
				return fmt.Errorf("sqlite: preparing %q: %w", text, err)
			}
			p.into[text] = s
			st.all = append(st.all, s)
		}
	}
	return nil
}

func (st *stmts) close() {
	for _, s := range st.all {
		s.Close()
	}
}
