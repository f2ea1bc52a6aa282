-- A sign-in attempt is written before its password is checked (so parallel guesses
-- cannot all pass the count) and removed again when it succeeds; the id names the
-- rows one attempt wrote.
ALTER TABLE auth.sign_in_failures ADD COLUMN attempt_id BIGINT GENERATED ALWAYS AS IDENTITY;
