//! Team mappings in the database: read the current state, and apply the changes
//! (`mapping::diff`) in the caller's transaction with one audit entry per change. The YAML
//! import and every admin edit in the UI go through here.

use sqlx::PgConnection;

use super::mapping::{Change, Mappings, Member, TeamMapping, moved};
use crate::audit_log::{Actor, record};

/// One owner, project or user of a team.
#[derive(sqlx::FromRow)]
struct MemberRow {
    kind: String,
    team: String,
    value: String,
}

/// Reads every team with its owners, projects, users and accounts.
pub async fn load(conn: &mut PgConnection) -> Result<Mappings, sqlx::Error> {
    let mut teams: Mappings = sqlx::query_scalar::<_, String>("select name from teams")
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|name| (name, TeamMapping::default()))
        .collect();
    let members: Vec<MemberRow> = sqlx::query_as(
        "select 'owner' as kind, t.name as team, o.email as value from team_owners o join teams t on t.id = o.team_id
         union all select 'project', t.name, p.name from projects p join teams t on t.id = p.team_id
         union all select 'user', t.name, u.name from tagged_users u join teams t on t.id = u.team_id
         union all select 'account', t.name, a.account_id from team_accounts a join teams t on t.id = a.team_id",
    )
    .fetch_all(&mut *conn)
    .await?;
    for MemberRow { kind, team, value } in members {
        if let Some(mapping) = teams.get_mut(&team) {
            let set = match kind.as_str() {
                "owner" => &mut mapping.owners,
                "project" => &mut mapping.projects,
                "account" => &mut mapping.accounts,
                _ => &mut mapping.users,
            };
            set.insert(value);
        }
    }
    Ok(teams)
}

/// Applies `changes` (from `diff`) and audits each one, in the caller's transaction.
pub async fn apply(conn: &mut PgConnection, actor: &Actor, changes: &[Change]) -> Result<(), sqlx::Error> {
    for change in changes {
        // A team's policy override goes with it (on delete cascade): the audit entry keeps it.
        let removed_policy =
            match change {
                Change::DeleteTeam(team) => sqlx::query_scalar::<_, serde_json::Value>(
                    "select to_jsonb(p) - 'team_id' - 'id' from enforcement_policies p join teams t on t.id = p.team_id
                 where t.name = $1",
                )
                .bind(team)
                .fetch_optional(&mut *conn)
                .await?,
                _ => None,
            };
        let (sql, team, value): (&str, &str, Option<&str>) = match change {
            Change::CreateTeam(team) => ("insert into teams (name) values ($1)", team, None),
            Change::DeleteTeam(team) => ("delete from teams where name = $1", team, None),
            Change::Add { member, team, value } => (add_sql(*member), team, Some(value)),
            Change::Remove { member, team, value } => (remove_sql(*member), team, Some(value)),
        };
        sqlx::query(sql).bind(team).bind(value).execute(&mut *conn).await?;
        record(
            conn,
            actor,
            &change.action(),
            team,
            serde_json::json!({ "change": change.to_string(), "policy_override": removed_policy }),
        )
        .await?;
    }
    Ok(())
}

/// $1 is the team's name, $2 the member.
fn add_sql(member: Member) -> &'static str {
    match member {
        Member::Owner => "insert into team_owners (team_id, email) select id, $2 from teams where name = $1",
        Member::Project => {
            "insert into projects (name, team_id) select $2, id from teams where name = $1
             on conflict (name) do update set team_id = excluded.team_id, updated_at = now()"
        }
        Member::User => {
            "insert into tagged_users (name, team_id) select $2, id from teams where name = $1
             on conflict (name) do update set team_id = excluded.team_id, updated_at = now()"
        }
        Member::Account => {
            "insert into team_accounts (account_id, team_id) select $2, id from teams where name = $1
             on conflict (account_id) do update set team_id = excluded.team_id, updated_at = now()"
        }
    }
}

fn remove_sql(member: Member) -> &'static str {
    match member {
        Member::Owner => {
            "delete from team_owners where email = $2 and team_id = (select id from teams where name = $1)"
        }
        Member::Project => {
            "update projects set team_id = null, updated_at = now()
             where name = $2 and team_id = (select id from teams where name = $1)"
        }
        Member::User => {
            "update tagged_users set team_id = null, updated_at = now()
             where name = $2 and team_id = (select id from teams where name = $1)"
        }
        Member::Account => {
            "delete from team_accounts where account_id = $2 and team_id = (select id from teams where name = $1)"
        }
    }
}

/// Projects, users and AWS accounts no team owns, with their unblended spend over the last
/// 30 days, costliest first (at most 200). An account's spend is what its mapping would
/// move: the part no project or user mapping claims.
pub async fn unmapped(conn: &mut sqlx::PgConnection) -> Result<Vec<super::model::Unmapped>, sqlx::Error> {
    sqlx::query_as(
        "select 'project' as kind, p.name, '' as detail, coalesce(sum(c.unblended), 0) as spend_30d from projects p
           left join daily_project_costs c on c.project = p.name and c.day >= current_date - 30
           where p.team_id is null group by p.name
         union all
         select 'user', u.name, '', coalesce(sum(c.unblended), 0) from tagged_users u
           left join costs_by_user c on c.user_name = u.name and c.day >= current_date - 30
           where u.team_id is null group by u.name
         union all
         select 'account', c.account_id, coalesce(max(n.name), ''), sum(c.unblended) from team_account_daily_costs c
           left join aws_accounts n on n.account_id = c.account_id
           where c.account_id <> '' and c.source in ('shared', 'unassigned') and c.day >= current_date - 30
             and not exists (select 1 from team_accounts a where a.account_id = c.account_id)
           group by c.account_id
         order by 4 desc, 2 limit 200",
    )
    .fetch_all(conn)
    .await
}

/// Applies `changes` (as [`apply`]) and says what they moved: a deleted team's days are read
/// before its allocated rows go with it.
pub async fn apply_moving(
    conn: &mut PgConnection,
    actor: &Actor,
    changes: &[Change],
) -> Result<crate::allocation::moves::Moved, sqlx::Error> {
    let deleted: Vec<&str> = changes
        .iter()
        .filter_map(|c| match c {
            Change::DeleteTeam(team) => Some(team.as_str()),
            _ => None,
        })
        .collect();
    let deleted = crate::allocation::moves::before_deleting(conn, &deleted).await?;
    apply(conn, actor, changes).await?;
    Ok(crate::allocation::moves::Moved {
        deleted,
        ..moved(changes)
    })
}
