-- shard_config records the shard count the deployment was bootstrapped
-- with (Store.BootstrapFences). Actors hash to shards by this count for the
-- life of the deployment: Go, etcd and the fence rows must agree, so a
-- daemon configured with another count refuses to start. One row, id 1.
CREATE TABLE IF NOT EXISTS shard_config (
    id         INT4        NOT NULL PRIMARY KEY CHECK (id = 1),
    shards     INT4        NOT NULL CHECK (shards >= 1),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
