//! The enforcement decision lock, held elsewhere: a person's decision that waits on it gets a
//! clear 503 with `Retry-After` through the same `serve` path as the binary, and changes
//! nothing; a team change commits its allocation rewrite without waiting on it, and disarms
//! afterwards, judging only the projects it moved; the per-minute pass leaves dry-run
//! proposals alone.

use std::collections::BTreeSet;

use burnrate::audit_log::Actor;
use burnrate::auth::Role;
use burnrate::enforcement::claims::DECISIONS_LOCK;
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::reconcile;
use burnrate::teams::edit::TeamEdit;
use burnrate::teams::mapping::TeamMapping;
use sqlx::PgPool;

use crate::common::enforcement::{action_id, resource_executor, seed, status, today};

const MANUAL_FLAG: &str = "insert into enforcement_policies (team_id, spend_limit, actions, mode)
    select id, 100, '{flag}', 'manual' from teams";

/// Holds the decision lock in a transaction of its own until the returned transaction ends.
async fn hold_decisions(pool: &PgPool) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut holder = pool.begin().await.expect("holder");
    sqlx::query("select pg_advisory_xact_lock($1)")
        .bind(DECISIONS_LOCK)
        .execute(&mut *holder)
        .await
        .expect("lock held");
    holder
}

/// gpu-burner's manual flag, evaluated and awaiting approval; its action's id.
async fn flag_awaiting_approval(pool: &PgPool) -> i64 {
    seed(pool, MANUAL_FLAG).await;
    evaluate_and_act(pool, today(), &executor().await)
        .await
        .expect("evaluate");
    let flag = action_id(pool, "gpu-burner", "flag").await;
    assert_eq!(status(pool, flag).await, "awaiting_approval");
    flag
}

async fn executor() -> burnrate::enforcement::executor::Executor {
    resource_executor(&crate::common::aws_config_at("http://127.0.0.1:9", "AKIDTEST").await)
}

#[sqlx::test]
async fn a_decision_waiting_on_the_lock_gets_a_503_with_retry_after_and_changes_nothing(pool: PgPool) {
    let flag = flag_awaiting_approval(&pool).await;
    let app = crate::common::spawn_app(pool.clone()).await;
    let admin = app.session_for("cfo@example.com", Role::Admin).await;
    let approve = format!("id={flag}&step=approve");

    let holder = hold_decisions(&pool).await;
    let busy = app.post_form_as("/api/enforcement_action", &approve, &admin).await;
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert_eq!(busy.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("5"));
    assert!(
        busy.body.contains("another change holds what this one needs") && busy.body.contains("nothing was changed"),
        "{}",
        busy.body
    );
    assert_eq!(status(&pool, flag).await, "awaiting_approval");

    holder.rollback().await.expect("released");
    let done = app.post_form_as("/api/enforcement_action", &approve, &admin).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(status(&pool, flag).await, "executed");
}

#[sqlx::test]
async fn a_team_change_commits_its_move_without_waiting_on_the_decision_lock(pool: PgPool) {
    let flag = flag_awaiting_approval(&pool).await;
    sqlx::query("insert into teams (name) values ('relaxed')")
        .execute(&pool)
        .await
        .expect("team");

    let holder = hold_decisions(&pool).await;
    let edit = TeamEdit {
        original: Some("relaxed".into()),
        name: "relaxed".into(),
        mapping: TeamMapping {
            owners: BTreeSet::from(["lead@example.com".to_string()]),
            projects: BTreeSet::from(["gpu-burner".to_string()]),
            users: BTreeSet::new(),
            accounts: BTreeSet::new(),
        },
        keep_accounts: true,
    };
    let saving = tokio::spawn({
        let pool = pool.clone();
        async move { burnrate::teams::edit::save(&pool, &Actor::system("test"), edit).await }
    });
    // The move and its allocation rewrite commit while another decision holds the lock.
    let mut moved = false;
    for _ in 0..100 {
        moved = sqlx::query_scalar(
            "select exists (select 1 from projects p join teams t on t.id = p.team_id
                            where p.name = 'gpu-burner' and t.name = 'relaxed')",
        )
        .fetch_one(&pool)
        .await
        .expect("read");
        if moved {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(moved, "the team change waited on the decision lock before committing");
    // Its disarm waits for the lock, then runs: team `relaxed` has no policy of its own, so
    // the org default (USD 1,000 a month) governs the project, and its $150 does not break it.
    holder.rollback().await.expect("released");
    let saved = saving.await.expect("joined");
    assert!(saved.is_ok(), "{saved:?}");
    assert_eq!(status(&pool, flag).await, "cancelled");
    assert!(
        crate::common::enforcement::last_message(&pool, flag)
            .await
            .contains("within the policy limit $1,000.00"),
        "{}",
        crate::common::enforcement::last_message(&pool, flag).await
    );
}

#[sqlx::test]
async fn the_per_minute_pass_leaves_dry_run_proposals_to_the_changes_that_rearm_them(pool: PgPool) {
    seed(
        &pool,
        "insert into enforcement_policies (team_id, spend_limit, actions, mode)
         select id, 100, '{flag}', 'dry-run' from teams",
    )
    .await;
    let exec = executor().await;
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let flag = action_id(&pool, "gpu-burner", "flag").await;
    assert_eq!(status(&pool, flag).await, "proposed");
    // Changed behind every path's back (no policy save, import or team change): the pass
    // does not re-judge the dry-run proposal, so it stays the record it was.
    sqlx::query("update enforcement_policies set mode = 'manual'")
        .execute(&pool)
        .await
        .expect("mode");
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, flag).await, "proposed");
    // A policy change through burnrate (here a config import, which judges right after it
    // commits) re-judges it: now awaiting approval.
    let text = "policies:
  - team: strict
    limit: \"100\"
    period: monthly
    actions: [flag]
    mode: manual
";
    let file = burnrate::as_code::parse(text).expect("parses");
    burnrate::as_code::apply(&pool, &Actor::system("test"), &file, false)
        .await
        .expect("imported");
    assert_eq!(status(&pool, flag).await, "awaiting_approval");
}

#[sqlx::test]
async fn a_team_change_judges_the_actions_of_the_projects_it_moves_and_no_other(pool: PgPool) {
    let flag = flag_awaiting_approval(&pool).await;
    // The strict team's limit rises above gpu-burner's spend behind enforcement's back: only
    // a judgement of gpu-burner's actions would cancel its flag.
    sqlx::query("update enforcement_policies set spend_limit = 100000 where team_id is not null")
        .execute(&pool)
        .await
        .expect("raised quietly");
    sqlx::query("insert into teams (name) values ('empty'), ('imported-away'), ('relaxed')")
        .execute(&pool)
        .await
        .expect("teams");
    let actor = Actor::system("test");

    // Deleting an empty team, in the app and by a config import, moves no project.
    burnrate::teams::edit::delete(&pool, &actor, "empty")
        .await
        .expect("deleted");
    assert_eq!(status(&pool, flag).await, "awaiting_approval", "judged by a deletion");
    let mut file = burnrate::as_code::parse(&burnrate::as_code::export(&pool).await.expect("export")).expect("parses");
    file.teams.as_mut().expect("teams").remove("imported-away");
    let applied = burnrate::as_code::apply(&pool, &actor, &file, false)
        .await
        .expect("imported");
    assert_eq!(applied.len(), 1, "{applied:?}");
    assert_eq!(status(&pool, flag).await, "awaiting_approval", "judged by an import");
    // A user tag's move changes no project's team, so no verdict.
    burnrate::teams::edit::assign(&pool, &actor, "user", "alice", "relaxed")
        .await
        .expect("user moved");
    assert_eq!(
        status(&pool, flag).await,
        "awaiting_approval",
        "judged by a user's move"
    );

    // Deleting strict, by an import, leaves gpu-burner Unassigned and takes strict's policy
    // with it: its actions are judged, and under the org default ($1,000) its $150 holds no
    // more. (A move in the app judges them too: the test above.)
    let mut file = burnrate::as_code::parse(&burnrate::as_code::export(&pool).await.expect("export")).expect("parses");
    file.teams.as_mut().expect("teams").remove("strict");
    // Teams alone: a file that manages policies or approvals judges every action anyway.
    file.policies = None;
    file.approvals = None;
    burnrate::as_code::apply(&pool, &actor, &file, false)
        .await
        .expect("imported");
    assert_eq!(status(&pool, flag).await, "cancelled");
}
