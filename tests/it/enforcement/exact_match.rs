//! A stop touches exactly the violating project's own GPUs (#51): a project named with EC2
//! filter wildcards finds only its own instances, instances a controller would replace are
//! left running, and an approval that commits between two stop calls holds back every
//! resource not yet stopped. The real SDK against moto on loopback; moto reads `\*` and `\?`
//! in filter values as literals, as EC2 does
//! (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Using_Filtering.html>).

use std::time::Duration;

use sqlx::PgPool;

use crate::common::aws_proxy::AwsProxy;
use crate::common::enforcement::{
    action_id, approve_behind_the_back, ec2_in, instance_state, launch_tagged, list_proposals, passes_until,
    resource_executor, resource_policy, seed, status, today,
};
use crate::common::{add_project_costs, aws_config_at, day, moto};
use burnrate::enforcement::evaluate::evaluate_and_act;

const EAST: &str = "us-east-1";
const WEST: &str = "us-west-2";

fn ec2(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_ec2::Client {
    ec2_in(sdk, region)
}

/// Launches one g5.xlarge (one GPU, 250 GB of instance store) with these tags; its ID.
async fn gpu(client: &aws_sdk_ec2::Client, tags: &[(&str, &str)]) -> String {
    launch_tagged(client, "g5.xlarge", tags).await
}

/// Runs gpu-burner's stop (automatic) until AWS has confirmed it; its id.
async fn run_stop(pool: &PgPool, sdk: &aws_config::SdkConfig) -> i64 {
    let exec = resource_executor(sdk);
    evaluate_and_act(pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(pool, "gpu-burner", "stop").await;
    passes_until(pool, &exec, stop, "executed").await;
    stop
}

/// The stop's row of `resource`: (id, status, note).
async fn row_of(pool: &PgPool, stop: i64, resource: &str) -> (String, String, Option<String>) {
    rows(pool, stop)
        .await
        .into_iter()
        .find(|r| r.0 == resource)
        .expect("the resource's row")
}

/// (resource id, status, note) of each row of the stop.
async fn rows(pool: &PgPool, stop: i64) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as("select resource_id, status, note from enforcement_resources where action_id = $1 order by id")
        .bind(stop)
        .fetch_all(pool)
        .await
        .expect("resource rows")
}

#[sqlx::test]
async fn a_project_named_with_wildcards_stops_only_its_own_instances(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let east = ec2(&sdk, EAST);
    let wild = gpu(&east, &[("project", "gpu-*")]).await;
    let burner = gpu(&east, &[("project", "gpu-burner")]).await;
    let one = gpu(&east, &[("project", "gpu-1")]).await;
    let question = gpu(&east, &[("project", "gpu-?")]).await;
    // gpu-burner is over the limit but approved; gpu-* is over the limit and is not.
    seed(&pool, &resource_policy("automatic")).await;
    approve_behind_the_back(&pool).await;
    let spent = (day(2026, 11, 10), day(2026, 11, 10));
    add_project_costs(&pool, "gpu-*", Some("strict"), spent, "150.00", "150.00").await;
    let exec = resource_executor(&sdk);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-*", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;

    let stopped: Vec<(String, String)> = rows(&pool, stop).await.into_iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(stopped, vec![(wild.clone(), "stopped".into())]);
    assert_eq!(instance_state(&east, &wild).await, "stopped");
    for id in [&burner, &one, &question] {
        assert_eq!(instance_state(&east, id).await, "running", "{id}");
    }
}

#[sqlx::test]
async fn instances_a_controller_would_replace_are_left_running_with_why(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let east = ec2(&sdk, EAST);
    let own = gpu(&east, &[("project", "gpu-burner")]).await;
    let karpenter = gpu(&east, &[("project", "gpu-burner"), ("karpenter.sh/nodepool", "gpu")]).await;
    // EC2 Fleet tags its instances itself; moto does not, so the test does.
    let fleet = gpu(&east, &[("project", "gpu-burner"), ("aws:ec2:fleet-id", "fleet-0abc")]).await;
    let scheduled = gpu(&east, &[("project", "gpu-burner"), ("example.com/scheduler", "slurm")]).await;
    seed(&pool, &resource_policy("automatic")).await;
    sqlx::query("update enforcement_policies set stop_managed_by_tags = '{example.com/scheduler}'")
        .execute(&pool)
        .await
        .expect("policy names a controller");
    let exec = resource_executor(&sdk);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;

    let found = rows(&pool, stop).await;
    let status_of = |id: &str| found.iter().find(|r| r.0 == id).map(|r| (r.1.clone(), r.2.clone()));
    assert_eq!(status_of(&own).map(|s| s.0), Some("stopped".into()));
    for (id, controller) in [
        (&karpenter, "Karpenter node pool \"gpu\" (tag karpenter.sh/nodepool)"),
        (&fleet, "EC2 Fleet \"fleet-0abc\" (tag aws:ec2:fleet-id)"),
        (
            &scheduled,
            "a controller the policy names \"slurm\" (tag example.com/scheduler)",
        ),
    ] {
        let (row_status, note) = status_of(id).expect("listed");
        assert_eq!(row_status, "skipped", "{id}");
        let note = note.expect("a reason");
        assert!(note.contains(controller), "{note}");
        assert!(note.contains("would replace it"), "{note}");
        assert_eq!(instance_state(&east, id).await, "running", "{id}");
    }
    assert_eq!(instance_state(&east, &own).await, "stopped");
}

#[sqlx::test]
async fn an_approval_between_two_stop_calls_holds_back_the_rest(pool: PgPool) {
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let sdk = aws_config_at(&proxy.endpoint(), "AKIDTEST").await;
    let east_id = gpu(&ec2(&sdk, EAST), &[("project", "gpu-burner")]).await;
    let west_id = gpu(&ec2(&sdk, WEST), &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("automatic")).await;
    let (reached, release) = proxy.hold("StopInstances");

    let run = {
        let (pool, exec) = (pool.clone(), resource_executor(&sdk));
        tokio::spawn(async move { evaluate_and_act(&pool, today(), &exec).await.expect("evaluate") })
    };
    // AWS has carried out the first stop call; burnrate has not heard yet.
    tokio::time::timeout(Duration::from_secs(60), reached.notified())
        .await
        .expect("the first StopInstances is sent");
    approve_behind_the_back(&pool).await;
    release.notify_one();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the run ends")
        .expect("the run does not panic");

    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let sent = proxy.with(|s| s.forwarded.iter().filter(|(a, _)| a == "StopInstances").count());
    assert_eq!(sent, 1, "no stop call after the approval committed");
    let states = (
        instance_state(&ec2(&sdk, EAST), &east_id).await,
        instance_state(&ec2(&sdk, WEST), &west_id).await,
    );
    assert!(
        states == ("stopped".into(), "running".into()) || states == ("running".into(), "stopped".into()),
        "{states:?}"
    );
    let listed: Vec<String> = rows(&pool, stop).await.into_iter().map(|r| r.1).collect();
    assert!(listed.contains(&"listed".to_string()), "{listed:?}");

    // The approval lifts what the one call stopped.
    let exec = resource_executor(&sdk);
    passes_until(&pool, &exec, stop, "reversed").await;
    assert_eq!(instance_state(&ec2(&sdk, EAST), &east_id).await, "running");
    assert_eq!(instance_state(&ec2(&sdk, WEST), &west_id).await, "running");
    assert_eq!(status(&pool, stop).await, "reversed");
}

#[sqlx::test]
async fn an_approval_whose_last_judgement_times_out_stands_and_runs_on_a_later_pass(pool: PgPool) {
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let sdk = aws_config_at(&proxy.endpoint(), "AKIDTEST").await;
    let east_id = gpu(&ec2(&sdk, EAST), &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("manual")).await;
    let exec = resource_executor(&sdk);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert_eq!(status(&pool, stop).await, "awaiting_approval");
    let (reached, release) = proxy.hold("DescribeInstances");

    let approve = {
        let (pool, exec) = (pool.clone(), resource_executor(&sdk));
        tokio::spawn(async move {
            burnrate::enforcement::actions::approve(&pool, &exec, stop, "finance@example.com", today()).await
        })
    };
    tokio::time::timeout(Duration::from_secs(60), reached.notified())
        .await
        .expect("the stop lists the project's resources");
    // Another decision holds the lock past the approval's lock timeout (5 s).
    let mut other = pool.begin().await.expect("transaction");
    sqlx::query("select pg_advisory_xact_lock($1)")
        .bind(burnrate::enforcement::claims::DECISIONS_LOCK)
        .execute(&mut *other)
        .await
        .expect("decision lock");
    release.notify_one();
    let answered = tokio::time::timeout(Duration::from_secs(60), approve)
        .await
        .expect("the approval answers")
        .expect("no panic")
        .expect("no error");
    assert_eq!(answered, "running");
    other.rollback().await.expect("lock freed");
    assert_eq!(instance_state(&ec2(&sdk, EAST), &east_id).await, "running");

    // The claim's lease runs out; the approval stands, and the next pass runs the stop.
    sqlx::query("update enforcement_actions set lease_until = now() - interval '1 second' where id = $1")
        .bind(stop)
        .execute(&pool)
        .await
        .expect("lease over");
    passes_until(&pool, &exec, stop, "executed").await;
    assert_eq!(instance_state(&ec2(&sdk, EAST), &east_id).await, "stopped");
    let approvals: i64 =
        sqlx::query_scalar("select count(*) from enforcement_audit where action_id = $1 and event = 'approved'")
            .bind(stop)
            .fetch_one(&pool)
            .await
            .expect("trail");
    assert_eq!(approvals, 1, "the approval is recorded once");
}

#[sqlx::test]
async fn instance_store_data_is_never_erased_unless_the_policy_allows_it(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let east = ec2(&sdk, EAST);
    // g5.xlarge carries 250 GB of NVMe instance store; g5g.xlarge has none (EBS only), as
    // EC2's DescribeInstanceTypes says and moto's catalogue copies.
    let nvme = gpu(&east, &[("project", "gpu-burner")]).await;
    let ebs_only = launch_tagged(&east, "g5g.xlarge", &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("automatic")).await;
    sqlx::query("update enforcement_policies set stop_allow_instance_store = false")
        .execute(&pool)
        .await
        .expect("the default: never erase");
    let stop = run_stop(&pool, &sdk).await;
    let found = rows(&pool, stop).await;
    let of = |id: &str| found.iter().find(|r| r.0 == id).cloned().expect("listed");
    let (_, skipped, why) = of(&nvme);
    assert_eq!(skipped, "skipped");
    let why = why.expect("why");
    assert!(
        why.contains("250 GB of instance-store") && why.contains("instance_store: allow"),
        "{why}"
    );
    assert_eq!(instance_state(&east, &nvme).await, "running");
    assert_eq!(of(&ebs_only).1, "stopped");
}

#[sqlx::test]
async fn a_proposal_allowed_to_erase_instance_store_says_what_it_will_erase(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let nvme = gpu(&ec2(&sdk, EAST), &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("dry-run")).await;
    let exec = resource_executor(&sdk);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    list_proposals(&pool, &exec).await;
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let found = rows(&pool, stop).await;
    let (_, listed, warning) = found.iter().find(|r| r.0 == nvme).cloned().expect("listed");
    assert_eq!(listed, "listed");
    let warning = warning.expect("a warning");
    assert!(warning.contains("erases its 250 GB"), "{warning}");
}

use crate::common::enforcement::attached;

async fn role(iam: &aws_sdk_iam::Client, name: &str) {
    iam.create_role()
        .role_name(name)
        .assume_role_policy_document(
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#,
        )
        .send()
        .await
        .expect("role");
}

#[sqlx::test]
async fn the_relaunch_guard_denies_the_violating_project_alone(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let iam = aws_sdk_iam::Client::new(&sdk);
    role(&iam, "ml-training").await;
    gpu(&ec2(&sdk, EAST), &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("automatic")).await;
    sqlx::query("update enforcement_policies set iam_roles = '{ml-training}'")
        .execute(&pool)
        .await
        .expect("roles, no policy named");
    let stop = run_stop(&pool, &sdk).await;

    let on_role = attached(&iam, "ml-training").await;
    assert_eq!(on_role.len(), 1, "{on_role:?}");
    let arn = &on_role[0];
    assert!(
        arn.starts_with("arn:aws:iam::123456789012:policy/burnrate/burnrate-deny-gpu-burner-"),
        "{arn}"
    );
    let policy = iam.get_policy().policy_arn(arn).send().await.expect("policy");
    let version = policy.policy().and_then(|p| p.default_version_id()).expect("version");
    let document = iam
        .get_policy_version()
        .policy_arn(arn)
        .version_id(version)
        .send()
        .await
        .expect("document")
        .policy_version()
        .and_then(|v| v.document())
        .expect("document")
        .to_string();
    // IAM answers the document URL-encoded.
    let document = if document.starts_with('{') {
        document
    } else {
        url::form_urlencoded::parse(format!("d={document}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .expect("decoded")
    };
    let document: serde_json::Value = serde_json::from_str(&document).expect("json");
    let statements = document["Statement"].as_array().expect("statements");
    assert_eq!(statements.len(), 2);
    for statement in statements {
        assert_eq!(statement["Effect"], "Deny");
        let equals = statement["Condition"]["StringEquals"]
            .as_object()
            .expect("StringEquals, never StringLike");
        assert_eq!(equals.len(), 1);
        let (key, value) = equals.iter().next().expect("one condition");
        assert!(
            key == "aws:RequestTag/project" || key == "aws:ResourceTag/project",
            "{key}"
        );
        assert_eq!(value, "gpu-burner");
    }

    approve_behind_the_back(&pool).await;
    passes_until(&pool, &resource_executor(&sdk), stop, "reversed").await;
    assert!(attached(&iam, "ml-training").await.is_empty());
}

#[sqlx::test]
async fn a_team_wide_deny_policy_is_not_attached_while_a_teammate_is_approved(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let iam = aws_sdk_iam::Client::new(&sdk);
    role(&iam, "ml-training").await;
    let deny = iam
        .create_policy()
        .policy_name("deny-gpu-launch")
        .policy_document(
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"ec2:RunInstances","Resource":"*"}]}"#,
        )
        .send()
        .await
        .expect("policy")
        .policy()
        .and_then(|p| p.arn())
        .expect("arn")
        .to_string();
    gpu(&ec2(&sdk, EAST), &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("automatic")).await;
    sqlx::query("update enforcement_policies set iam_roles = '{ml-training}', iam_policy_arn = $1")
        .bind(&deny)
        .execute(&pool)
        .await
        .expect("a team-wide deny policy");
    // Another project of the strict team is approved: it launches through the same role.
    add_project_costs(
        &pool,
        "launch-week",
        Some("strict"),
        (day(2026, 11, 10), day(2026, 11, 10)),
        "10.00",
        "10.00",
    )
    .await;
    sqlx::query(
        "insert into approvals (key, project, approver, reason, cap, expires, created_by)
         values ('launch-week', 'launch-week', 'cfo@example.com', 'launch', 5000, '2099-12-31', 'finance@example.com')",
    )
    .execute(&pool)
    .await
    .expect("approval");
    let stop = run_stop(&pool, &sdk).await;

    let (_, status, why) = row_of(&pool, stop, "ml-training").await;
    assert_eq!(status, "skipped");
    let why = why.expect("why");
    assert!(
        why.contains("\"launch-week\"") && why.contains("leave policy_arn out"),
        "{why}"
    );
    assert!(attached(&iam, "ml-training").await.is_empty());
}

#[sqlx::test]
async fn a_policy_planted_under_the_guards_name_is_never_attached(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let iam = aws_sdk_iam::Client::new(&sdk);
    role(&iam, "ml-training").await;
    // Someone who can create policies guessed the name and made it allow everything.
    iam.create_policy()
        .policy_name(burnrate::enforcement::resources::relaunch::name("gpu-burner"))
        .path("/burnrate/")
        .policy_document(r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#)
        .send()
        .await
        .expect("planted");
    gpu(&ec2(&sdk, EAST), &[("project", "gpu-burner")]).await;
    seed(&pool, &resource_policy("automatic")).await;
    sqlx::query("update enforcement_policies set iam_roles = '{ml-training}'")
        .execute(&pool)
        .await
        .expect("roles, no policy named");
    let stop = run_stop(&pool, &sdk).await;

    let (_, status, why) = row_of(&pool, stop, "ml-training").await;
    assert_eq!(status, "failed");
    assert!(why.expect("why").contains("another document"));
    assert!(attached(&iam, "ml-training").await.is_empty());
}
