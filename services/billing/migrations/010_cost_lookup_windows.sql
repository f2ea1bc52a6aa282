-- The public cost lookup's limit per client address: one row per address per fixed
-- window, counted with one upsert, in Postgres so every billing replica (and so
-- every edge) counts the same lookups. Old windows are swept.
CREATE TABLE billing.cost_lookup_windows (
  client_address TEXT NOT NULL,
  window_start   TIMESTAMPTZ NOT NULL,
  lookups        INTEGER NOT NULL,
  PRIMARY KEY (client_address, window_start)
);
