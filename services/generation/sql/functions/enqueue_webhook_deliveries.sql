-- A finished job's webhook deliveries, one per endpoint of its account that takes
-- the outcome's event type: written by a trigger on generation.jobs, so in the same
-- transaction as the outcome (success, failure, orphan sweep), whichever code path
-- wrote it. The unique (endpoint, request) makes a second outcome row record nothing.
-- The sender (src/webhooks/sender.ts) claims the rows and sends them.
CREATE OR REPLACE FUNCTION generation.enqueue_webhook_deliveries() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
  INSERT INTO generation.webhook_deliveries (delivery_id, endpoint_id, account_id, request_id, event_type)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.endpoint_id, NEW.account_id, NEW.request_id,
           'image.generation.' || NEW.status
      FROM generation.webhook_endpoints e
     WHERE e.account_id = NEW.account_id AND ('image.generation.' || NEW.status) = ANY (e.events)
    ON CONFLICT (endpoint_id, request_id) DO NOTHING;
  RETURN NULL;
END $$;
