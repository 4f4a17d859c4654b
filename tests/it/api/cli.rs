//! `burnrate token` and `burnrate check` as CI and launch scripts run them: the secret alone on
//! stdout, and the verdict as the exit status (0, 10, 20; 1 without a verdict; 2 misused).

use std::process::{Command, Output};

use sqlx::PgPool;

use super::ORG;
use crate::common::{burnrate_command, database_url, import_config, spawn_app};
use burnrate::auth::Role;

async fn run(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[sqlx::test]
async fn a_ci_token_made_at_the_cli_gates_a_launch_by_exit_status(pool: PgPool) {
    import_config(&pool, ORG).await;
    crate::common::create_account(&pool, "ci-owner@example.com", Role::Lead).await;
    let url = database_url(&pool).await;
    let app = spawn_app(pool.clone()).await;

    let mut create = burnrate_command(&url);
    create.args([
        "token",
        "create",
        "--email",
        "ci-owner@example.com",
        "--name",
        "ci",
        "--role",
        "viewer",
        "--team",
        "vision",
        "--expires-days",
        "30",
    ]);
    let created = run(create).await;
    assert!(created.status.success(), "{}", text(&created.stderr));
    let stdout = text(&created.stdout);
    let secret = stdout.trim_end_matches('\n');
    assert!(
        secret.starts_with("brt_") && !secret.contains(char::is_whitespace),
        "the secret alone: {stdout:?}"
    );
    assert_eq!(stdout.lines().count(), 1);
    assert!(text(&created.stderr).contains("shown once"));

    let mut list = burnrate_command(&url);
    list.args(["token", "list"]);
    let listed = text(&run(list).await.stdout);
    assert!(
        listed.starts_with("email,name,hint,role,team,service,created,expires,last_used,state\n"),
        "{listed}"
    );
    assert!(
        listed.contains("ci-owner@example.com,ci,") && listed.contains(",viewer,vision,false,"),
        "{listed}"
    );
    assert!(!listed.contains(&secret[10..]), "never the secret");

    let check = |args: &[&str], token: Option<&str>| {
        let mut command = burnrate_command(&url);
        command.arg("check").args(args).env("BURNRATE_URL", app.url(""));
        if let Some(token) = token {
            command.env("BURNRATE_TOKEN", token);
        }
        run(command)
    };
    // The vision budget is $1,000: 100 allows, 500 warns (50 %), 1,000.01 blocks.
    for (cost, code, first) in [("100", 0, "allow"), ("500", 10, "warn"), ("1000.01", 20, "block")] {
        let out = check(&["--project", "detector", "--cost", cost], Some(secret)).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{cost}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout).lines().next(), Some(first));
    }
    // 2 × g5.xlarge × 100 h = $201.20: allowed.
    let gpus = check(
        &[
            "--project",
            "detector",
            "--gpu",
            "g5.xlarge",
            "--count",
            "2",
            "--hours",
            "100",
        ],
        Some(secret),
    )
    .await;
    assert_eq!(gpus.status.code(), Some(0), "{}", text(&gpus.stderr));
    assert!(
        text(&gpus.stdout).contains("estimate: $201.20"),
        "{}",
        text(&gpus.stdout)
    );
    // Another team's project: the token is limited to vision.
    let other = check(&["--project", "train"], Some(secret)).await;
    assert_eq!(other.status.code(), Some(1));
    assert!(text(&other.stderr).contains("403"), "{}", text(&other.stderr));
    // Misused: no token, or --gpu without --hours.
    assert_eq!(check(&["--project", "detector"], None).await.status.code(), Some(2));
    assert_eq!(
        check(
            &["--project", "detector", "--gpu", "g5.xlarge", "--count", "1"],
            Some(secret)
        )
        .await
        .status
        .code(),
        Some(2)
    );

    // Revoked at the CLI: the next check cannot get a verdict.
    let mut revoke = burnrate_command(&url);
    revoke.args(["token", "revoke", "--name", "ci", "--email", "ci-owner@example.com"]);
    assert!(run(revoke).await.status.success());
    let refused = check(&["--project", "detector", "--cost", "1"], Some(secret)).await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("401"), "{}", text(&refused.stderr));
    assert!(!text(&refused.stderr).contains(secret), "the token is never printed");
}
