-- What the operator sees of a failure (docs/console.md, "Operator pages"): the upstream's own
-- words (a blocked URL, an unreadable image, a timeout, an HTTP status and message), kept with
-- the failed job and as each channel's last failure, never shown to the client.
ALTER TABLE generation.jobs ADD COLUMN failure_detail TEXT CHECK (char_length(failure_detail) <= 2000);

-- A channel's last upstream failure, whichever replica saw it (also for the sandbox, which has no breaker).
ALTER TABLE generation.channel_state ADD COLUMN last_failure_detail TEXT CHECK (char_length(last_failure_detail) <= 2000);
ALTER TABLE generation.channel_state ADD COLUMN last_failure_at TIMESTAMPTZ;

-- When the breaker opened: a start bounds opened_until by opened_at plus the cool-down it runs
-- with, so a restart with a shorter GENERATION_BREAKER_COOLDOWN_MS never keeps a channel out longer.
ALTER TABLE generation.channel_state ADD COLUMN opened_at TIMESTAMPTZ;
