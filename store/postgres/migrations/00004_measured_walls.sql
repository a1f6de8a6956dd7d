-- The largest input each run model has run to success on this server, which GET /v1/models
-- shows as measured_wall (store.History.MeasuredWalls). As store/sqlite's 00007: history
-- that stays when the jobs it came from go, filled from the jobs already held and raised by
-- every completion after.

-- +goose Up
CREATE TABLE measured_walls (
    run_model text    PRIMARY KEY,
    residues  integer NOT NULL
);

INSERT INTO measured_walls (run_model, residues)
SELECT run_model, max(n) FROM (
    SELECT j.run_model, (r.value ->> 'n_residues')::integer AS n
    FROM jobs j, json_array_elements(coalesce(j.results -> 'rows', '[]'::json)) r
    WHERE j.status = 'succeeded' AND r.value ->> 'status' = 'ok'
    UNION ALL
    SELECT j.run_model, (e.value ->> 'length')::integer
    FROM jobs j, json_array_elements(coalesce(j.results -> 'embedding' -> 'sequences', '[]'::json)) e
    WHERE j.status = 'succeeded') sizes
WHERE n > 0
GROUP BY run_model;

-- +goose Down
DROP TABLE measured_walls;
