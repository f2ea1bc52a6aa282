-- The console playground charged every account under the one key id 'console', so its
-- key_spend row mixed all tenants' spend under the first account's name. Each account's
-- playground now has its own key id, 'console-' || account_id (libs/core playground-key.ts).
-- The ledger keeps its old entries untouched; the projections move to the new ids,
-- recomputed from the cost records (replay maps the old id the same way).

UPDATE billing.cost_records SET key_id = 'console-' || account_id WHERE key_id = 'console';

DELETE FROM billing.key_spend WHERE key_id = 'console';

-- What a key has captured is its records' captures; what it holds is the reservation of
-- each record not settled yet (a settled record holds nothing).
INSERT INTO billing.key_spend (key_id, account_id, captured_micros, held_micros)
SELECT key_id, account_id, sum(captured_micros), sum(CASE WHEN settled_by IS NULL THEN reserved_micros ELSE 0 END)
  FROM billing.cost_records
 WHERE key_id = 'console-' || account_id
 GROUP BY key_id, account_id
ON CONFLICT (key_id) DO UPDATE SET captured_micros = excluded.captured_micros, held_micros = excluded.held_micros;
