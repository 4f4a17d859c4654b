//! `burnrate config import` / `export`: whole-file validation, one transaction, audit.

use crate::common;

use std::process::Output;

use crate::common::database_url;
use sqlx::PgPool;

fn burnrate(database: &str, args: &[&str]) -> Output {
    crate::common::burnrate_command(database)
        .args(args)
        .output()
        .expect("burnrate runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn mapping(pool: &PgPool) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "select 'project', p.name, coalesce(t.name, 'Unassigned') from projects p left join teams t on t.id = p.team_id
         union all select 'user', u.name, coalesce(t.name, 'Unassigned') from tagged_users u left join teams t on t.id = u.team_id
         union all select 'owner', o.email, t.name from team_owners o join teams t on t.id = o.team_id
         order by 1, 2",
    )
    .fetch_all(pool)
    .await
    .expect("mapping")
}

#[sqlx::test]
async fn import_applies_the_whole_file_or_nothing_and_export_round_trips(pool: PgPool) {
    let url = database_url(&pool).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("teams.yaml");
    std::fs::write(
        &good,
        "teams:\n  - name: ml-research\n    owners: [alice@example.com]\n    projects: [llm-finetune, rlhf-eval]\n    users: [alice, bob]\n  - name: platform\n    owners: [ops@example.com]\n    projects: [\"<img src=x onerror=alert(1)>\"]\n",
    )
    .expect("write");
    sqlx::query("insert into projects (name) values ('orphan')")
        .execute(&pool)
        .await
        .expect("seen project");

    let dry = burnrate(&url, &["config", "import", good.to_str().expect("path"), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    assert!(
        text(&dry.stdout).contains("would create team \"ml-research\""),
        "{}",
        text(&dry.stdout)
    );
    assert_eq!(
        mapping(&pool).await,
        [("project".into(), "orphan".into(), "Unassigned".into())],
        "dry run changes nothing"
    );

    let applied = burnrate(&url, &["config", "import", good.to_str().expect("path")]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let after = mapping(&pool).await;
    assert!(after.contains(&("project".into(), "llm-finetune".into(), "ml-research".into())));
    assert!(after.contains(&("user".into(), "bob".into(), "ml-research".into())));
    assert!(after.contains(&("owner".into(), "ops@example.com".into(), "platform".into())));
    assert!(after.contains(&("project".into(), "orphan".into(), "Unassigned".into())));
    let audited: i64 =
        sqlx::query_scalar("select count(*) from audit_log where action like 'team.%' and actor = 'cli'")
            .fetch_one(&pool)
            .await
            .expect("audit");
    assert_eq!(audited, 2 + 2 + 3 + 2, "one audit entry per change");

    // Export, then import the export: nothing to change.
    let exported = burnrate(&url, &["config", "export"]);
    assert!(exported.status.success());
    let round_trip = dir.path().join("export.yaml");
    std::fs::write(&round_trip, &exported.stdout).expect("write");
    let again = burnrate(&url, &["config", "import", round_trip.to_str().expect("path")]);
    assert!(text(&again.stdout).starts_with("no changes"), "{}", text(&again.stdout));

    // A file with one bad entry changes nothing and names the line.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "teams:\n  - name: ml-research\n    owners: [alice@example.com]\n    projects: [llm-finetune]\n  - name: platform\n    owners: [not-an-email]\n",
    )
    .expect("write");
    let rejected = burnrate(&url, &["config", "import", bad.to_str().expect("path")]);
    assert_eq!(rejected.status.code(), Some(1));
    let stderr = text(&rejected.stderr);
    assert!(
        stderr.contains("bad.yaml: line 6: owner \"not-an-email\" is not an email address"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert_eq!(mapping(&pool).await, after);

    // Removing a team from the file removes it; its projects become Unassigned. Its policy
    // override goes with it, and the audit entry keeps what it was.
    sqlx::query(
        "insert into enforcement_policies (team_id, spend_limit, actions, mode)
         select id, 4321, '{notify}', 'manual' from teams where name = 'ml-research'",
    )
    .execute(&pool)
    .await
    .expect("override");
    let smaller = dir.path().join("smaller.yaml");
    std::fs::write(
        &smaller,
        "teams:\n  - name: platform\n    owners: [ops@example.com]\n    projects: [\"<img src=x onerror=alert(1)>\"]\n",
    )
    .expect("write");
    let removed = burnrate(&url, &["config", "import", smaller.to_str().expect("path")]);
    assert!(
        text(&removed.stdout).contains("delete team \"ml-research\""),
        "{}",
        text(&removed.stdout)
    );
    let final_state = mapping(&pool).await;
    assert!(final_state.contains(&("project".into(), "llm-finetune".into(), "Unassigned".into())));
    let recorded: serde_json::Value = sqlx::query_scalar(
        "select details->'policy_override' from audit_log where action = 'team.delete' and subject = 'ml-research'",
    )
    .fetch_one(&pool)
    .await
    .expect("audited");
    assert_eq!(recorded["spend_limit"], serde_json::json!(4321.00));
    assert_eq!(recorded["mode"], "manual");
    assert_eq!(recorded["key"], "team:ml-research");
}

#[sqlx::test]
async fn admins_map_teams_in_the_ui_and_others_are_refused(pool: PgPool) {
    use burnrate::auth::Role;
    let app = common::spawn_app(pool.clone()).await;
    sqlx::query("insert into projects (name) values ('<img src=x onerror=alert(1)>'), ('rlhf-eval')")
        .execute(&pool)
        .await
        .expect("seen projects");
    let lead = app.session_for("lead@example.com", Role::Lead).await;
    let form = "original=&name=ml-research&owners=alice%40example.com&projects=rlhf-eval&users=alice";
    assert_eq!(app.post_form_as("/api/admin/save_team", form, &lead).await.status, 403);
    assert_eq!(app.post_form("/api/admin/teams", "").await.status, 401);

    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let saved = app.post_form_as("/api/admin/save_team", form, &admin).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    let bad = app
        .post_form_as(
            "/api/admin/save_team",
            "original=&name=Unassigned&owners=&projects=&users=",
            &admin,
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("reserved for unmapped spend"), "{}", bad.body);
    let bad_owner = app
        .post_form_as(
            "/api/admin/save_team",
            "original=&name=x&owners=nope&projects=&users=",
            &admin,
        )
        .await;
    assert_eq!(bad_owner.status, 400);

    let page = app.get_as("/admin/teams", &admin).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "unmapped hostile project shown as text"
    );
    assert!(!page.body.contains("<img src=x"));

    let assigned = app
        .post_form_as(
            "/api/admin/assign",
            &format!(
                "kind=project&name={}&team=ml-research",
                common::encode("<img src=x onerror=alert(1)>")
            ),
            &admin,
        )
        .await;
    assert_eq!(assigned.status, 200, "{}", assigned.body);
    // Rename keeps the mappings.
    let renamed = app
        .post_form_as(
            "/api/admin/save_team",
            &format!(
                "original=ml-research&name=research&owners=alice%40example.com&projects={}%0Arlhf-eval&users=alice",
                common::encode("<img src=x onerror=alert(1)>")
            ),
            &admin,
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    let state = mapping(&pool).await;
    assert!(state.contains(&("project".into(), "rlhf-eval".into(), "research".into())));
    assert!(state.contains(&(
        "project".into(),
        "<img src=x onerror=alert(1)>".into(),
        "research".into()
    )));
    let actions: Vec<String> =
        sqlx::query_scalar("select action from audit_log where action like 'team.%' order by id")
            .fetch_all(&pool)
            .await
            .expect("audit");
    assert!(
        actions.contains(&"team.create".to_string()) && actions.contains(&"team.rename".to_string()),
        "{actions:?}"
    );

    assert_eq!(
        app.post_form_as("/api/admin/delete_team", "name=research", &admin)
            .await
            .status,
        200
    );
    assert!(
        mapping(&pool)
            .await
            .contains(&("project".into(), "rlhf-eval".into(), "Unassigned".into()))
    );
}

/// AWS accounts on the Teams page: a form's accounts are checked (12 digits), assigned from
/// the unmapped list, kept by a save that sends none (a client from before accounts), moved
/// by a save that lists them for another team, and audited.
#[sqlx::test]
async fn admins_map_accounts_in_the_ui_and_bad_ids_are_named(pool: PgPool) {
    use burnrate::auth::Role;
    let app = common::spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let lead = app.session_for("lead@example.com", Role::Lead).await;
    let save = |form: &'static str| {
        let (app, admin) = (&app, &admin);
        async move { app.post_form_as("/api/admin/save_team", form, admin).await }
    };
    let accounts = |pool: PgPool| async move {
        sqlx::query_as::<_, (String, String)>(
            "select a.account_id, t.name from team_accounts a join teams t on t.id = a.team_id order by 1",
        )
        .fetch_all(&pool)
        .await
        .expect("accounts")
    };
    let bad = save("original=&name=ml&owners=&projects=&users=&accounts=12345").await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.body.contains("accounts") && bad.body.contains("not an AWS account ID"),
        "{}",
        bad.body
    );
    assert!(accounts(pool.clone()).await.is_empty(), "nothing saved");

    let made = save("original=&name=ml&owners=&projects=&users=&accounts=012345678901%0A111122223333").await;
    assert_eq!(made.status, 200, "{}", made.body);
    assert_eq!(save("original=&name=web&owners=&projects=&users=").await.status, 200);
    let assign = |form: String, who| {
        let app = &app;
        async move { app.post_form_as("/api/admin/assign", &form, who).await }
    };
    assert_eq!(
        assign("kind=account&name=444455556666&team=web".into(), &lead)
            .await
            .status,
        403
    );
    let refused = assign("kind=account&name=4444-5555-6666&team=web".into(), &admin).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        assign("kind=account&name=444455556666&team=web".into(), &admin)
            .await
            .status,
        200
    );

    // A save without the field keeps the team's accounts; one that lists an account moves it.
    assert_eq!(
        save("original=ml&name=ml&owners=&projects=&users=alice").await.status,
        200
    );
    assert_eq!(
        save("original=web&name=web&owners=&projects=&users=&accounts=111122223333")
            .await
            .status,
        200
    );
    assert_eq!(
        accounts(pool.clone()).await,
        [
            ("012345678901".to_string(), "ml".to_string()),
            ("111122223333".to_string(), "web".to_string()),
        ],
        "444455556666 left web: the save listed only 111122223333"
    );
    let audited: i64 = sqlx::query_scalar("select count(*) from audit_log where action like 'team.account.%'")
        .fetch_one(&pool)
        .await
        .expect("audit");
    // Mapped 012345678901, 111122223333 and 444455556666; unmapped 444455556666 and
    // 111122223333 (from ml), mapped 111122223333 (to web).
    assert_eq!(audited, 6);
}
