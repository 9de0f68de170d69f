-- v1: runs, their steps, their answers and their per-second series.
CREATE TABLE crest.runs (
    id                bigserial PRIMARY KEY,
    started_at        timestamptz NOT NULL,
    label             text,
    commit            text,
    branch            text,
    tags              jsonb NOT NULL DEFAULT '{}',
    unit              text NOT NULL,
    duration_s        double precision NOT NULL,
    ended_by          text NOT NULL,
    throughput_per_s  double precision NOT NULL,
    throughput_rps    double precision NOT NULL,
    requests          bigint NOT NULL,
    successes         bigint NOT NULL,
    failures          bigint NOT NULL,
    error_rate        double precision NOT NULL,
    p50_ms            double precision NOT NULL,
    p95_ms            double precision NOT NULL,
    p99_ms            double precision NOT NULL,
    optimal_per_s     double precision,
    limit_per_s       double precision,
    bottleneck        text,
    bottleneck_kind   text,
    thresholds_passed boolean,
    crest_version     text NOT NULL,
    results           jsonb NOT NULL
);
CREATE INDEX runs_label_started ON crest.runs (label, started_at);

CREATE TABLE crest.steps (
    run_id         bigint NOT NULL REFERENCES crest.runs (id) ON DELETE CASCADE,
    step           integer NOT NULL,
    kind           jsonb NOT NULL,
    users          bigint,
    rate           double precision,
    duration_s     double precision,
    steady_s       double precision,
    requests       bigint NOT NULL,
    failures       bigint NOT NULL,
    throughput_rps double precision NOT NULL,
    success_per_s  double precision,
    p50_ms         double precision NOT NULL,
    p95_ms         double precision NOT NULL,
    p99_ms         double precision NOT NULL,
    PRIMARY KEY (run_id, step)
);

CREATE TABLE crest.answers (
    run_id     bigint NOT NULL REFERENCES crest.runs (id) ON DELETE CASCADE,
    position   integer NOT NULL,
    -- 'optimal', 'limit' or 'threshold'
    answer     text NOT NULL,
    -- the threshold as written, or the step's kind for 'optimal' and 'limit'
    name       text NOT NULL,
    passed     boolean,
    value      double precision,
    step       integer,
    users      bigint,
    rate       double precision,
    per_s      double precision,
    error_rate double precision,
    p99_ms     double precision,
    why        text,
    PRIMARY KEY (run_id, position)
);

-- The time column is in the primary key, so that TimescaleDB can make this a hypertable.
CREATE TABLE crest.series (
    run_id    bigint NOT NULL REFERENCES crest.runs (id) ON DELETE CASCADE,
    at        timestamptz NOT NULL,
    requests  bigint NOT NULL,
    successes bigint NOT NULL,
    failures  bigint NOT NULL,
    p50_ms    double precision NOT NULL,
    p95_ms    double precision NOT NULL,
    p99_ms    double precision NOT NULL,
    PRIMARY KEY (run_id, at)
);
