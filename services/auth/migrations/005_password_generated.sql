-- True while an account's password is the one generated at first start (bootstrap.ts
-- logs it once); changing the password clears it. The console asks such an admin to
-- change it at sign-in.
ALTER TABLE auth.accounts ADD COLUMN password_generated BOOLEAN NOT NULL DEFAULT false;
