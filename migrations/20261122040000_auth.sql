-- Sign-in accounts, server-side sessions, sign-in attempts for rate limiting, and the audit log.

create table accounts (
    id bigint generated always as identity primary key,
    -- Stored lower-case so sign-in is case-insensitive and unique per person.
    email text not null unique check (email = lower(email) and position('@' in email) > 1),
    display_name text not null default '',
    role text not null check (role in ('admin', 'lead', 'viewer')),
    password_hash text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

-- The cookie carries a random token; only its SHA-256 is stored, so a database leak
-- does not hand out live sessions.
create table sessions (
    token_hash bytea primary key,
    account_id bigint not null references accounts (id) on delete cascade,
    created_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    expires_at timestamptz not null
);
create index sessions_account_id on sessions (account_id);

create table sign_in_attempts (
    id bigint generated always as identity primary key,
    email text not null,
    ip text not null,
    succeeded boolean not null,
    created_at timestamptz not null default now()
);
create index sign_in_attempts_email on sign_in_attempts (email, created_at);
create index sign_in_attempts_ip on sign_in_attempts (ip, created_at);

-- Append-only: who changed what, and when.
create table audit_log (
    id bigint generated always as identity primary key,
    actor_account_id bigint references accounts (id) on delete set null,
    actor text not null,
    action text not null,
    subject text not null,
    details jsonb not null default '{}',
    created_at timestamptz not null default now()
);
create index audit_log_created_at on audit_log (created_at desc);

create function audit_log_is_append_only() returns trigger language plpgsql as $$
begin
    raise exception 'audit_log is append-only';
end;
$$;
create trigger audit_log_no_update_or_delete before update or delete on audit_log
    for each row execute function audit_log_is_append_only();
