-- Sign-in limits count per account and client address together, and old attempts are
-- purged by age: both through an index.
create index sign_in_attempts_email_ip on sign_in_attempts (email, ip, created_at);
create index sign_in_attempts_created_at on sign_in_attempts (created_at);
