-- API tokens (#38): `Authorization: Bearer brt_…` on /api/v1 only. Only the secret's SHA-256
-- is kept (a leaked table opens nothing); the prefix `brt_` lets secret scanners find a
-- leaked secret. A token acts as its account, with a role no higher than the account's
-- (checked at every use, so a demoted or disabled account's tokens shrink or stop with it),
-- and optionally for one team only.
create table api_tokens (
    id bigint generated always as identity primary key,
    account_id bigint not null references accounts (id) on delete cascade,
    name text not null check (length(name) between 1 and 100),
    secret_hash bytea not null unique,
    -- The first characters of the secret, for people to tell tokens apart.
    hint text not null,
    role text not null check (role in ('admin', 'lead', 'viewer')),
    team_id bigint references teams (id) on delete cascade,
    -- Created by an admin for a service (CI, a launcher) rather than for the account's own use.
    service boolean not null default false,
    created_by text not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    check (expires_at <= created_at + interval '366 days'),
    last_used_at timestamptz,
    revoked_at timestamptz,
    revoked_by text,
    -- The per-token rate limit: uses in the minute that started at `window_started_at`.
    window_started_at timestamptz not null default now(),
    window_uses integer not null default 0
);

-- One live token of a name per account, so `token revoke --name --email` names exactly one.
create unique index api_tokens_live_name on api_tokens (account_id, name) where revoked_at is null;
