-- One upstream job's channel-slot statements (migrations/005_channel_slots.sql in
-- services/generation): take a slot on one channel, give it back with a success.
-- Against a database with only that migration applied (docs/providers.md, "Capacity
-- and the circuit breaker"):
--   createdb slots && psql -d slots -c 'CREATE SCHEMA generation' \
--     -f services/generation/migrations/005_channel_slots.sql
--   PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 8 -j 2 -T 10 -r \
--     -f bench/channel-slots.pgbench.sql slots
-- (the service runs them with synchronous_commit off; drop PGOPTIONS to see them wait for the flush).
\set id random(1, 2000000000)
SELECT * FROM generation.take_channel_slot('s' || :id || '-' || :client_id, 'h', ARRAY['m/a'], ARRAY[1000], 5, 30000);
SELECT generation.release_channel_slot('s' || :id || '-' || :client_id, 'm/a', 'succeeded', 5, 30000);
