-- Accounts can be disabled (kept, with their history, but unable to sign in) and deleted.
alter table accounts add column disabled_at timestamptz;
-- Expired sessions are purged by age.
create index sessions_expires_at on sessions (expires_at);
create index sessions_last_seen_at on sessions (last_seen_at);
