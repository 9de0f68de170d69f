-- v2: whether the work tree had changes, when the run was stored, and runs by branch.
ALTER TABLE crest.runs ADD COLUMN dirty boolean;
ALTER TABLE crest.runs ADD COLUMN stored_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX runs_branch_started ON crest.runs (branch, started_at);
CREATE INDEX series_at ON crest.series (at);
