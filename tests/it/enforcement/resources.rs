//! A stop that reaches the violating project's own GPUs: the real AWS SDK against moto on
//! loopback, for EC2 (two regions) and SageMaker notebooks. moto answers StopInstances and
//! StopNotebookInstance with the final state at once, where AWS passes through `stopping`
//! (`Stopping`) first; the proxy's `transitions` shows those states as AWS documents them,
//! and one test holds a stop and its reversal through them.

use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::aws_proxy::AwsProxy;
use crate::common::enforcement::{
    action_id, approve_behind_the_back, instance_state, list_proposals, passes_until, resource_executor,
    resource_policy, seed, seed_on, status, today,
};
use crate::common::{aws_config_at, moto};
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::reconcile;

const EAST: &str = "us-east-1";
const WEST: &str = "us-west-2";

fn ec2(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_ec2::Client {
    crate::common::enforcement::ec2_in(sdk, region)
}

fn sagemaker(sdk: &aws_config::SdkConfig, region: &str) -> aws_sdk_sagemaker::Client {
    aws_sdk_sagemaker::Client::from_conf(
        aws_sdk_sagemaker::config::Builder::from(sdk)
            .region(aws_config::Region::new(region.to_string()))
            .build(),
    )
}

/// Launches one instance tagged `project` (and `user`); its ID.
async fn launch(client: &aws_sdk_ec2::Client, instance_type: &str, project: &str, user: Option<&str>) -> String {
    let mut tags = vec![("project", project)];
    tags.extend(user.map(|u| ("user", u)));
    crate::common::enforcement::launch_tagged(client, instance_type, &tags).await
}

async fn notebook(client: &aws_sdk_sagemaker::Client, name: &str, project: &str) {
    client
        .create_notebook_instance()
        .notebook_instance_name(name)
        .instance_type(aws_sdk_sagemaker::types::InstanceType::from("ml.p3.2xlarge"))
        .role_arn("arn:aws:iam::123456789012:role/sagemaker")
        .tags(
            aws_sdk_sagemaker::types::Tag::builder()
                .key("project")
                .value(project)
                .build(),
        )
        .send()
        .await
        .expect("moto creates the notebook");
}

async fn notebook_status(client: &aws_sdk_sagemaker::Client, name: &str) -> String {
    let out = client
        .describe_notebook_instance()
        .notebook_instance_name(name)
        .send()
        .await
        .expect("describe notebook");
    out.notebook_instance_status().expect("status").as_str().to_string()
}

/// (region, kind, id, instance type, GPUs, status, user) of each resource row of the stop.
type Listed = (String, String, String, String, Decimal, String, Option<String>);

async fn listed(pool: &PgPool, action: i64) -> Vec<Listed> {
    sqlx::query_as(
        "select region, kind, resource_id, instance_type, gpus, status, user_tag from enforcement_resources
         where action_id = $1 order by region, kind, resource_id",
    )
    .bind(action)
    .fetch_all(pool)
    .await
    .expect("resource rows")
}

fn row(region: &str, kind: &str, id: &str, instance_type: &str, gpus: i64, status: &str, user: Option<&str>) -> Listed {
    (
        region.into(),
        kind.into(),
        id.into(),
        instance_type.into(),
        Decimal::from(gpus),
        status.into(),
        user.map(str::to_string),
    )
}

/// The project's fleet: a GPU instance in each region, a CPU instance and a stopped GPU
/// instance under the same tag, another project's GPU instance, and a GPU notebook.
struct Fleet {
    east_gpu: String,
    west_gpu: String,
    east_cpu: String,
    stopped_gpu: String,
    others_gpu: String,
}

async fn fleet(sdk: &aws_config::SdkConfig) -> Fleet {
    let (east, west) = (ec2(sdk, EAST), ec2(sdk, WEST));
    let fleet = Fleet {
        east_gpu: launch(&east, "g5.xlarge", "gpu-burner", Some("alice")).await,
        west_gpu: launch(&west, "p4d.24xlarge", "gpu-burner", Some("bob")).await,
        east_cpu: launch(&east, "m5.large", "gpu-burner", None).await,
        stopped_gpu: launch(&east, "g5.xlarge", "gpu-burner", None).await,
        others_gpu: launch(&east, "g5.xlarge", "someone-else", None).await,
    };
    east.stop_instances()
        .instance_ids(&fleet.stopped_gpu)
        .send()
        .await
        .expect("stopped beforehand");
    notebook(&sagemaker(sdk, EAST), "burner-lab", "gpu-burner").await;
    notebook(&sagemaker(sdk, WEST), "other-lab", "someone-else").await;
    fleet
}

/// What a stop of gpu-burner must list: its running GPU instances in both regions and its
/// GPU notebook, in `status`.
fn expected(fleet: &Fleet, status: &str) -> Vec<Listed> {
    let mut rows = vec![
        row(EAST, "ec2", &fleet.east_gpu, "g5.xlarge", 1, status, Some("alice")),
        row(EAST, "notebook", "burner-lab", "ml.p3.2xlarge", 1, status, None),
        row(WEST, "ec2", &fleet.west_gpu, "p4d.24xlarge", 8, status, Some("bob")),
    ];
    rows.sort();
    rows
}

#[sqlx::test]
async fn a_dry_run_stop_lists_exactly_the_projects_running_gpus_in_each_region(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let fleet = fleet(&sdk).await;
    seed(&pool, &resource_policy("dry-run")).await;
    let exec = resource_executor(&sdk);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    // The enforcement pass lists nothing: the lister does, apart from it.
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert!(listed(&pool, stop).await.is_empty());
    assert_eq!(list_proposals(&pool, &exec).await, 1);

    assert_eq!(status(&pool, stop).await, "proposed");
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "listed"));
    // Listing touched nothing.
    let east = ec2(&sdk, EAST);
    for id in [&fleet.east_gpu, &fleet.east_cpu, &fleet.others_gpu] {
        assert_eq!(instance_state(&east, id).await, "running", "{id}");
    }
    assert_eq!(instance_state(&ec2(&sdk, WEST), &fleet.west_gpu).await, "running");
    assert_eq!(notebook_status(&sagemaker(&sdk, EAST), "burner-lab").await, "InService");
    // Each price is the catalogue's list price across the resource.
    let prices: Vec<(String, Option<Decimal>)> = sqlx::query_as(
        "select resource_id, usd_per_hour from enforcement_resources where action_id = $1 order by resource_id",
    )
    .bind(stop)
    .fetch_all(&pool)
    .await
    .expect("prices");
    assert!(
        prices.contains(&("burner-lab".into(), Some(Decimal::new(3825, 3)))),
        "{prices:?}"
    );
    assert!(
        prices.contains(&(fleet.west_gpu.clone(), Some(Decimal::new(21957642, 6)))),
        "{prices:?}"
    );
}

#[sqlx::test]
async fn a_stop_stops_exactly_the_projects_gpus_and_reversal_restarts_exactly_those(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let fleet = fleet(&sdk).await;
    seed(&pool, &resource_policy("automatic")).await;
    let exec = resource_executor(&sdk);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "stopped"));
    let (east, west) = (ec2(&sdk, EAST), ec2(&sdk, WEST));
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "stopped");
    assert_eq!(instance_state(&west, &fleet.west_gpu).await, "stopped");
    assert_eq!(notebook_status(&sagemaker(&sdk, EAST), "burner-lab").await, "Stopped");
    // What the stop is not for keeps running: the CPU instance, another project's GPUs.
    assert_eq!(instance_state(&east, &fleet.east_cpu).await, "running");
    assert_eq!(instance_state(&east, &fleet.others_gpu).await, "running");
    assert_eq!(notebook_status(&sagemaker(&sdk, WEST), "other-lab").await, "InService");

    let reversed = burnrate::enforcement::reverse::reverse(&pool, &exec, stop, "finance@example.com")
        .await
        .expect("reversed");
    assert!(["reversing", "reversed"].contains(&reversed.as_str()), "{reversed}");
    passes_until(&pool, &exec, stop, "reversed").await;
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "restarted"));
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "running");
    assert_eq!(instance_state(&west, &fleet.west_gpu).await, "running");
    assert_eq!(notebook_status(&sagemaker(&sdk, EAST), "burner-lab").await, "InService");
    // The instance that was stopped before the stop stays stopped.
    assert_eq!(instance_state(&east, &fleet.stopped_gpu).await, "stopped");
}

#[sqlx::test]
async fn an_approval_after_the_stop_lifts_it(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let fleet = fleet(&sdk).await;
    seed(&pool, &resource_policy("automatic")).await;
    let exec = resource_executor(&sdk);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;

    approve_behind_the_back(&pool).await;
    passes_until(&pool, &exec, stop, "reversed").await;
    assert_eq!(instance_state(&ec2(&sdk, EAST), &fleet.east_gpu).await, "running");
    assert_eq!(instance_state(&ec2(&sdk, WEST), &fleet.west_gpu).await, "running");
}

#[sqlx::test]
async fn switching_the_policy_to_dry_run_lifts_a_stop_in_force(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let fleet = fleet(&sdk).await;
    seed(&pool, &resource_policy("automatic")).await;
    let exec = resource_executor(&sdk);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;
    assert_eq!(instance_state(&ec2(&sdk, EAST), &fleet.east_gpu).await, "stopped");

    sqlx::query("update enforcement_policies set mode = 'dry-run'")
        .execute(&pool)
        .await
        .expect("dry-run");
    passes_until(&pool, &exec, stop, "reversed").await;
    assert_eq!(instance_state(&ec2(&sdk, EAST), &fleet.east_gpu).await, "running");
    assert_eq!(notebook_status(&sagemaker(&sdk, EAST), "burner-lab").await, "InService");
}

#[sqlx::test]
async fn throttling_on_half_the_calls_still_converges(pool: PgPool) {
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let fleet = fleet(&aws_config_at(&moto.endpoint, "AKIDTEST").await).await;
    proxy.with(|s| {
        s.throttle = [
            "DescribeInstances",
            "StopInstances",
            "ListNotebookInstances",
            "GetResources",
            "DescribeNotebookInstance",
            "StopNotebookInstance",
        ]
        .map(str::to_string)
        .to_vec()
    });
    seed(&pool, &resource_policy("automatic")).await;
    let exec = resource_executor(&aws_config_at(&proxy.endpoint(), "AKIDTEST").await);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    // The first stop calls were throttled: not failed, still under way.
    assert_eq!(status(&pool, stop).await, "executing");
    let mut passes = 0;
    while status(&pool, stop).await != "executed" && passes < 10 {
        reconcile::pass(&pool, &exec, today()).await.expect("pass");
        passes += 1;
    }
    assert_eq!(status(&pool, stop).await, "executed", "after {passes} passes");
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "stopped"));
    let east = ec2(&aws_config_at(&moto.endpoint, "AKIDTEST").await, EAST);
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "stopped");
    assert_eq!(instance_state(&east, &fleet.east_cpu).await, "running");
    // Half the calls of each listed kind were refused with throttling along the way.
    assert!(proxy.with(|s| s.throttled) >= 3, "{}", proxy.with(|s| s.throttled));
}

#[sqlx::test]
async fn a_run_killed_between_stop_instances_and_its_record_converges_without_stopping_twice(pool: PgPool) {
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let direct = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let fleet = fleet(&direct).await;
    // The CLI judges the real today: the spend is this month's.
    let today = crate::common::today();
    seed_on(&pool, &resource_policy("automatic"), today).await;
    let url = crate::common::database_url(&pool).await;

    let child = crate::common::burnrate_command(&url)
        .args(["enforce", "evaluate"])
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "test-secret")
        .env("AWS_REGION", EAST)
        .env("BURNRATE_AWS_REGIONS", "us-east-1,us-west-2")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("burnrate runs");
    proxy.with(|s| s.kill_after = Some(("StopInstances".into(), child.id())));
    // Waited for off this thread: the proxy answers the child on this test's runtime.
    let died = tokio::task::spawn_blocking(move || {
        let mut child = child;
        child.wait()
    })
    .await
    .expect("joined")
    .expect("waited");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert!(
        !died.success(),
        "killed by the proxy right after AWS stopped an instance; the stop is {} ({}); calls: {:?}",
        status(&pool, stop).await,
        crate::common::enforcement::last_message(&pool, stop).await,
        proxy.with(|s| s.forwarded.iter().map(|(a, _)| a.clone()).collect::<Vec<_>>())
    );
    // The claim ended before the calls: the stop is under way, and the one instance AWS
    // stopped is `requested`, its answer never recorded.
    assert_eq!(status(&pool, stop).await, "executing");
    let stopped_before_record: Vec<String> = sqlx::query_scalar(
        "select resource_id from enforcement_resources where action_id = $1 and status = 'requested'",
    )
    .bind(stop)
    .fetch_all(&pool)
    .await
    .expect("rows");
    assert_eq!(
        stopped_before_record.len(),
        1,
        "one instance was stopped in AWS but not recorded"
    );

    let exec = resource_executor(&aws_config_at(&proxy.endpoint(), "AKIDTEST").await);
    let mut passes = 0;
    while status(&pool, stop).await != "executed" && passes < 5 {
        reconcile::pass(&pool, &exec, today).await.expect("pass");
        passes += 1;
    }
    assert_eq!(status(&pool, stop).await, "executed");
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "stopped"));
    // Each GPU instance was asked to stop exactly once: none twice, none forgotten.
    for id in [&fleet.east_gpu, &fleet.west_gpu] {
        assert_eq!(proxy.calls_naming("StopInstances", id), 1, "{id}");
    }
    assert_eq!(proxy.calls_naming("StopInstances", &fleet.east_cpu), 0);
}

#[sqlx::test]
async fn a_snooze_holds_the_stop_then_ends_by_itself(pool: PgPool) {
    use burnrate::enforcement::snooze;
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let fleet = fleet(&sdk).await;
    seed(&pool, &resource_policy("automatic")).await;
    let exec = resource_executor(&sdk);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;
    let east = ec2(&sdk, EAST);
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "stopped");

    // Who may snooze, and what: checked at the API.
    let app = crate::common::spawn_app(pool.clone()).await;
    let outsider = app.session_for("lead@example.com", burnrate::auth::Role::Lead).await;
    let admin = app.session_for("cfo@example.com", burnrate::auth::Role::Admin).await;
    let form = |hours: &str| format!("id={stop}&hours={hours}&reason=demo%20day");
    assert_eq!(
        app.post_form_as("/api/snooze_stop", &form("2"), &outsider).await.status,
        403
    );
    let too_long = app.post_form_as("/api/snooze_stop", &form("73"), &admin).await;
    assert_eq!(too_long.status, 400, "{}", too_long.body);
    assert!(too_long.body.contains("1 to 72"), "{}", too_long.body);

    let held = snooze::validate("2", "demo day").expect("valid");
    let after = snooze::snooze(&pool, &exec, stop, ("owner@example.com", false), &held)
        .await
        .expect("snoozed");
    assert!(["reversing", "reversed"].contains(&after.as_str()), "{after}");
    passes_until(&pool, &exec, stop, "reversed").await;
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "running");
    // While snoozed, the automatic policy does not stop it again.
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "reversed");
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "running");

    // Two hours later the snooze ends by itself, and the stop, still justified, runs again.
    sqlx::query("update enforcement_actions set snoozed_until = now() - interval '1 second' where id = $1")
        .bind(stop)
        .execute(&pool)
        .await
        .expect("time passes");
    passes_until(&pool, &exec, stop, "executed").await;
    assert_eq!(instance_state(&east, &fleet.east_gpu).await, "stopped");
    let events: Vec<String> =
        sqlx::query_scalar("select event from enforcement_audit where action_id = $1 order by id")
            .bind(stop)
            .fetch_all(&pool)
            .await
            .expect("trail");
    let snoozed = events.iter().position(|e| e == "snoozed").expect("snoozed audited");
    let ended = events
        .iter()
        .position(|e| e == "snooze_ended")
        .expect("its end audited");
    assert!(snoozed < ended, "{events:?}");
    assert_eq!(events.last().map(String::as_str), Some("executed"), "{events:?}");
}

#[sqlx::test]
async fn a_stop_naming_another_account_acts_there_through_the_assumed_role(pool: PgPool) {
    const AWAY: &str = "210987654321";
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let own = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    // burnrate's own account runs the project too: a stop naming the other account leaves it.
    let home_gpu = launch(&ec2(&own, EAST), "g5.xlarge", "gpu-burner", None).await;
    // The other account, as the role there sees it (moto keeps each account's resources apart
    // and serves a request in the account of the role its credentials were assumed from).
    let assumed = aws_sdk_sts::Client::new(&own)
        .assume_role()
        .role_arn(format!("arn:aws:iam::{AWAY}:role/setup"))
        .role_session_name("setup")
        .send()
        .await
        .expect("assumed");
    let keys = assumed.credentials().expect("credentials");
    let away = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new(EAST))
        .endpoint_url(&moto.endpoint)
        .http_client(burnrate::aws::https_client())
        .credentials_provider(aws_credential_types::Credentials::new(
            keys.access_key_id(),
            keys.secret_access_key(),
            Some(keys.session_token().to_string()),
            None,
            "test",
        ))
        .load()
        .await;
    let away_gpu = launch(&ec2(&away, EAST), "g5.xlarge", "gpu-burner", Some("carol")).await;
    seed(
        &pool,
        &format!(
            "insert into enforcement_policies (team_id, spend_limit, actions, mode, stop_resources, stop_regions, stop_account,
                                               stop_allow_instance_store)
             select id, 100, '{{stop}}', 'automatic', '{{ec2}}', '{{us-east-1}}', '{AWAY}', true from teams"
        ),
    )
    .await;
    let via_proxy = aws_config_at(&proxy.endpoint(), "AKIDTEST").await;

    // Without a role to assume, the stop cannot act there, and says why.
    let exec = resource_executor(&via_proxy);
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    assert_eq!(status(&pool, stop).await, "failed");
    assert!(
        crate::common::enforcement::last_message(&pool, stop)
            .await
            .contains("BURNRATE_AWS_ASSUME_ROLE is not set"),
        "{}",
        crate::common::enforcement::last_message(&pool, stop).await
    );

    let exec = burnrate::enforcement::executor::Executor {
        assume_role: Some(burnrate::config::AssumeRole {
            pattern: "arn:aws:iam::{account_id}:role/burnrate-enforcer".into(),
            external_id: Some("burnrate-e2e".into()),
        }),
        ..resource_executor(&via_proxy)
    };
    burnrate::enforcement::actions::retry(&pool, &exec, stop, "finance@example.com", today())
        .await
        .expect("retried");
    passes_until(&pool, &exec, stop, "executed").await;
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("select account_id, resource_id, status from enforcement_resources where action_id = $1")
            .bind(stop)
            .fetch_all(&pool)
            .await
            .expect("rows");
    assert_eq!(rows, [(AWAY.to_string(), away_gpu.clone(), "stopped".to_string())]);
    assert_eq!(instance_state(&ec2(&away, EAST), &away_gpu).await, "stopped");
    assert_eq!(instance_state(&ec2(&own, EAST), &home_gpu).await, "running");
    // The role in that account, with the external ID its trust policy requires.
    assert_eq!(
        proxy.calls_naming(
            "AssumeRole",
            "RoleArn=arn%3Aaws%3Aiam%3A%3A210987654321%3Arole%2Fburnrate-enforcer"
        ),
        proxy.calls_naming("AssumeRole", "ExternalId=burnrate-e2e")
    );
    assert!(proxy.calls_naming("AssumeRole", "ExternalId=burnrate-e2e") >= 1);
}

/// The stop's rows (id, status), by region, kind and ID.
async fn row_states(pool: &PgPool, stop: i64) -> Vec<(String, String)> {
    listed(pool, stop).await.into_iter().map(|r| (r.2, r.5)).collect()
}

/// AWS stops and starts instances and notebooks asynchronously (the proxy shows `stopping`
/// and `pending`, `Stopping` and `Pending`, until told AWS is done, where moto is done at
/// once): the stop stays executing while any is still stopping, and a pass meanwhile
/// re-describes without stopping again; a reversal is done only once AWS reports them
/// running, each started once.
#[sqlx::test]
async fn instances_aws_is_still_stopping_keep_the_stop_executing_and_a_restart_waits_for_running(pool: PgPool) {
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let fleet = fleet(&aws_config_at(&moto.endpoint, "AKIDTEST").await).await;
    proxy.with(|s| s.transitions = true);
    seed(&pool, &resource_policy("automatic")).await;
    let exec = resource_executor(&aws_config_at(&proxy.endpoint(), "AKIDTEST").await);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    for _ in 0..3 {
        reconcile::pass(&pool, &exec, today()).await.expect("pass");
    }
    let rows = |state: &str| {
        vec![
            (fleet.east_gpu.clone(), state.to_string()),
            ("burner-lab".to_string(), state.to_string()),
            (fleet.west_gpu.clone(), state.to_string()),
        ]
    };
    assert_eq!(row_states(&pool, stop).await, rows("stopping"));
    assert_eq!(status(&pool, stop).await, "executing", "not done while AWS is stopping");
    for id in [&fleet.east_gpu, &fleet.west_gpu] {
        assert_eq!(proxy.calls_naming("StopInstances", id), 1, "stopped once: {id}");
    }
    proxy.settle();
    passes_until(&pool, &exec, stop, "executed").await;
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "stopped"));

    burnrate::enforcement::reverse::reverse(&pool, &exec, stop, "finance@example.com")
        .await
        .expect("reversed");
    for _ in 0..2 {
        reconcile::pass(&pool, &exec, today()).await.expect("pass");
    }
    assert_eq!(
        row_states(&pool, stop).await,
        rows("starting"),
        "StartInstances answered pending"
    );
    assert_eq!(status(&pool, stop).await, "reversing");
    proxy.settle();
    passes_until(&pool, &exec, stop, "reversed").await;
    assert_eq!(listed(&pool, stop).await, expected(&fleet, "restarted"));
    for id in [&fleet.east_gpu, &fleet.west_gpu] {
        assert_eq!(proxy.calls_naming("StartInstances", id), 1, "started once: {id}");
    }
    assert_eq!(proxy.calls_naming("StopNotebookInstance", "burner-lab"), 1);
    assert_eq!(proxy.calls_naming("StartNotebookInstance", "burner-lab"), 1);
}
