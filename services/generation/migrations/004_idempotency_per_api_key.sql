-- Idempotency-Key is scoped to the API key, not the account (docs/api.md): a
-- replay is only ever of a request the same key made, so a key's restrictions
-- (its models, its limit) always apply to what it receives.
--
-- Existing rows take the key id of their job, so a live key keeps naming its
-- request for the key that made it. A row without a job is a claim whose request
-- had not started a job (its process was stopped by this very upgrade, or died
-- earlier): it names nothing that could be replayed, so it is dropped.
ALTER TABLE generation.idempotency_keys ADD COLUMN key_id TEXT;
UPDATE generation.idempotency_keys AS claim SET key_id = job.key_id
  FROM generation.jobs AS job WHERE job.request_id = claim.request_id;
DELETE FROM generation.idempotency_keys WHERE key_id IS NULL;
ALTER TABLE generation.idempotency_keys ALTER COLUMN key_id SET NOT NULL;
ALTER TABLE generation.idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE generation.idempotency_keys ADD PRIMARY KEY (account_id, key_id, idempotency_key);
