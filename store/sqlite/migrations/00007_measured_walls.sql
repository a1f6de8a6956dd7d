-- The largest input each run model has run to success on this server (residues of a
-- prediction target that succeeded, or of an embedded sequence), which GET /v1/models shows
-- as measured_wall. It is history: it stays when the jobs it came from are deleted or
-- evicted. Filled from the jobs already held, and raised by every completion after.

-- +goose Up
CREATE TABLE measured_walls (
    run_model TEXT    PRIMARY KEY,
    residues  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO measured_walls (run_model, residues)
SELECT run_model, max(n) FROM (
    SELECT j.run_model, json_extract(r.value, '$.n_residues') AS n
    FROM jobs j, json_each(j.results, '$.rows') r
    WHERE j.status = 'succeeded' AND json_extract(r.value, '$.status') = 'ok'
    UNION ALL
    SELECT j.run_model, json_extract(e.value, '$.length')
    FROM jobs j, json_each(j.results, '$.embedding.sequences') e
    WHERE j.status = 'succeeded')
WHERE n > 0
GROUP BY run_model;

-- +goose Down
DROP TABLE measured_walls;
