//! What a resource stop does with each kind AWS runs a project's GPUs as, beyond the plain
//! instance and notebook (`resources.rs`): jobs stopped for good and an endpoint deleted then
//! created again (the SageMaker fake: moto has no StopTrainingJob, and its endpoints change
//! state at once); a deny policy attached to the roles that launch GPUs, then detached (moto's
//! IAM); and the EC2 instances a stop must leave running — Auto Scaling members (moto), a
//! one-time Spot Instance AWS refuses to stop and an instance-store root (moto stops any Spot
//! Instance and launches every AMI with an EBS root, so the proxy gives AWS's documented
//! answers for those two).

use aws_sdk_ec2::types::{
    InstanceMarketOptionsRequest, InstanceType, MarketType, ResourceType, SpotInstanceType, SpotMarketOptions, Tag,
    TagSpecification,
};
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::aws_proxy::{AwsProxy, Refusal, Rewrite};
use crate::common::enforcement::{
    action_id, approve_behind_the_back, instance_state, last_message, passes_until, resource_executor, seed, status,
    today,
};
use crate::common::sagemaker_fake::{FakeEndpoint, SageMakerFake, job};
use crate::common::{aws_config_at, moto};
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::executor::Executor;
use burnrate::enforcement::reconcile;

/// A stop of `kinds` in us-east-1 for team `strict` (limit 100), automatic, with more
/// `(columns, values)`, each starting with a comma. The g5 instances it stops carry instance
/// store, so it allows erasing it.
fn policy(kinds: &str, (columns, values): (&str, &str)) -> String {
    format!(
        "insert into enforcement_policies (team_id, spend_limit, actions, mode, stop_resources, stop_regions,
                                           stop_allow_instance_store{columns})
         select id, 100, '{{flag,stop}}', 'automatic', '{{{kinds}}}', '{{us-east-1}}', true{values} from teams"
    )
}

type Row = (String, String, String, Decimal, String);

/// The stop's rows: (kind, resource, instance type, GPUs, status), in a stable order.
async fn rows(pool: &PgPool, stop: i64) -> Vec<Row> {
    sqlx::query_as(
        "select kind, resource_id, instance_type, gpus, status from enforcement_resources
         where action_id = $1 order by kind, resource_id",
    )
    .bind(stop)
    .fetch_all(pool)
    .await
    .expect("rows")
}

fn row(kind: &str, id: &str, instance_type: &str, gpus: i64, status: &str) -> Row {
    (
        kind.into(),
        id.into(),
        instance_type.into(),
        Decimal::from(gpus),
        status.into(),
    )
}

async fn note(pool: &PgPool, stop: i64, resource: &str) -> String {
    sqlx::query_scalar("select coalesce(note, '') from enforcement_resources where action_id = $1 and resource_id = $2")
        .bind(stop)
        .bind(resource)
        .fetch_one(pool)
        .await
        .expect("note")
}

async fn pass(pool: &PgPool, exec: &Executor) {
    reconcile::pass(pool, exec, today()).await.expect("pass");
}

#[sqlx::test]
async fn jobs_stop_for_good_and_an_endpoint_is_deleted_then_created_again_from_its_config(pool: PgPool) {
    let fake = SageMakerFake::start().await;
    fake.with(|s| {
        s.training
            .insert("burner-train".into(), job("gpu-burner", "ml.p4d.24xlarge", 2));
        s.training
            .insert("burner-cpu-train".into(), job("gpu-burner", "ml.m5.xlarge", 1));
        // More than a page (100) of other projects' jobs: the listing follows NextToken.
        for i in 0..101 {
            s.training
                .insert(format!("another-{i:03}"), job("someone-else", "ml.g5.xlarge", 1));
        }
        s.processing
            .insert("burner-features".into(), job("gpu-burner", "ml.g5.2xlarge", 1));
        s.configs
            .insert("burner-serving-v3".into(), vec![("ml.g5.xlarge".into(), 2)]);
        s.endpoints.insert(
            "burner-serving".into(),
            FakeEndpoint {
                status: "InService".into(),
                config: "burner-serving-v3".into(),
                tags: vec![("project".into(), "gpu-burner".into())],
            },
        );
    });
    seed(&pool, &policy("training_jobs,processing_jobs,endpoints", ("", ""))).await;
    let exec = resource_executor(&aws_config_at(&fake.endpoint(), "AKIDTEST").await);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    // AWS accepted each call and works on it: nothing is done until AWS says so.
    assert_eq!(status(&pool, stop).await, "executing");
    assert_eq!(
        rows(&pool, stop).await,
        [
            row("endpoint", "burner-serving", "ml.g5.xlarge", 2, "stopping"),
            row("processing_job", "burner-features", "ml.g5.2xlarge", 1, "stopping"),
            row("training_job", "burner-train", "ml.p4d.24xlarge", 16, "stopping"),
        ]
    );
    fake.settle();
    pass(&pool, &exec).await;
    assert_eq!(status(&pool, stop).await, "executed");
    assert!(rows(&pool, stop).await.iter().all(|r| r.4 == "stopped"));
    for job in ["burner-train", "burner-features"] {
        assert!(
            note(&pool, stop, job)
                .await
                .contains("reversal cannot bring the job back"),
            "{job}"
        );
    }
    fake.with(|s| {
        assert_eq!(s.training["burner-train"].status, "Stopped");
        assert_eq!(s.processing["burner-features"].status, "Stopped");
        // The CPU job under the same tag and other projects' jobs run on.
        assert_eq!(s.training["burner-cpu-train"].status, "InProgress");
        assert!((0..101).all(|i| s.training[&format!("another-{i:03}")].status == "InProgress"));
        assert!(!s.endpoints.contains_key("burner-serving"));
        // The config the endpoint is created again from is kept.
        assert!(s.configs.contains_key("burner-serving-v3"));
    });

    let reversed = burnrate::enforcement::reverse::reverse(&pool, &exec, stop, "finance@example.com")
        .await
        .expect("reversed");
    assert_eq!(reversed, "reversing");
    fake.settle();
    pass(&pool, &exec).await;
    assert_eq!(status(&pool, stop).await, "reversed");
    assert_eq!(
        rows(&pool, stop).await,
        [
            row("endpoint", "burner-serving", "ml.g5.xlarge", 2, "restarted"),
            row("processing_job", "burner-features", "ml.g5.2xlarge", 1, "stopped"),
            row("training_job", "burner-train", "ml.p4d.24xlarge", 16, "stopped"),
        ]
    );
    assert!(
        last_message(&pool, stop).await.contains("2 jobs stay stopped"),
        "{}",
        last_message(&pool, stop).await
    );
    fake.with(|s| {
        let endpoint = &s.endpoints["burner-serving"];
        assert_eq!(endpoint.status, "InService");
        assert_eq!(endpoint.config, "burner-serving-v3");
        // Created again with the project tag, so its spend is still the project's.
        assert_eq!(endpoint.tags, [("project".to_string(), "gpu-burner".to_string())]);
        assert_eq!(s.training["burner-train"].status, "Stopped");
    });
    // Each was acted on exactly once.
    assert_eq!(fake.count("StopTrainingJob"), 1);
    assert_eq!(fake.count("StopProcessingJob"), 1);
    assert_eq!(fake.count("DeleteEndpoint"), 1);
    assert_eq!(fake.count("CreateEndpoint"), 1);
}

/// A deny policy for GPU launches, as docs/ENFORCEMENT.md gives it.
const DENY_GPU_LAUNCH: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"ec2:RunInstances",
"Resource":"arn:aws:ec2:*:*:instance/*","Condition":{"StringLike":{"ec2:InstanceType":["p*","g*","trn*","inf*"]}}}]}"#;
const TRUST: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;

use crate::common::enforcement::attached;

async fn launch(ec2: &aws_sdk_ec2::Client, project: &str, spot: bool) -> String {
    let mut run = ec2
        .run_instances()
        .image_id("ami-12c6146b")
        .instance_type(InstanceType::from("g5.xlarge"))
        .min_count(1)
        .max_count(1)
        .tag_specifications(
            TagSpecification::builder()
                .resource_type(ResourceType::Instance)
                .tags(Tag::builder().key("project").value(project).build())
                .build(),
        );
    if spot {
        run = run.instance_market_options(
            InstanceMarketOptionsRequest::builder()
                .market_type(MarketType::Spot)
                .spot_options(
                    SpotMarketOptions::builder()
                        .spot_instance_type(SpotInstanceType::OneTime)
                        .build(),
                )
                .build(),
        );
    }
    let out = run.send().await.expect("moto launches it");
    out.instances()[0].instance_id().expect("id").to_string()
}

#[sqlx::test]
async fn a_deny_policy_keeps_the_named_roles_from_relaunching_until_reversal_detaches_it(pool: PgPool) {
    let moto = moto::start().await;
    let sdk = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let iam = aws_sdk_iam::Client::new(&sdk);
    for role in ["ml-training", "unrelated", "guarded"] {
        iam.create_role()
            .role_name(role)
            .assume_role_policy_document(TRUST)
            .send()
            .await
            .expect("role");
    }
    let created = iam
        .create_policy()
        .policy_name("deny-gpu-launch")
        .policy_document(DENY_GPU_LAUNCH)
        .send()
        .await
        .expect("policy");
    let deny = created.policy().and_then(|p| p.arn()).expect("arn").to_string();
    // Someone attached the policy to `guarded` by hand: the stop leaves it, and so does reversal.
    iam.attach_role_policy()
        .role_name("guarded")
        .policy_arn(&deny)
        .send()
        .await
        .expect("attached by hand");
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let gpu = launch(&ec2, "gpu-burner", false).await;
    // `ghost` names no role in the account: IAM's refusal is that row's failure alone.
    let values = format!(", '{deny}', '{{ml-training,ghost,guarded}}'");
    seed(&pool, &policy("ec2", (", iam_policy_arn, iam_roles", &values))).await;
    let exec = resource_executor(&sdk);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;
    assert_eq!(
        rows(&pool, stop).await,
        [
            row("ec2", &gpu, "g5.xlarge", 1, "stopped"),
            row("iam_role", "ghost", "", 0, "failed"),
            row("iam_role", "guarded", "", 0, "skipped"),
            row("iam_role", "ml-training", "", 0, "stopped"),
        ]
    );
    assert!(note(&pool, stop, "guarded").await.contains("outside burnrate"));
    assert_eq!(attached(&iam, "ml-training").await, std::slice::from_ref(&deny));
    assert!(attached(&iam, "unrelated").await.is_empty());
    assert!(note(&pool, stop, "ghost").await.contains("AttachRolePolicy"));
    assert!(note(&pool, stop, "ml-training").await.contains("cannot launch GPUs"));
    assert_eq!(instance_state(&ec2, &gpu).await, "stopped");

    // Approved: the stop is lifted, the instance started and the deny policy detached.
    approve_behind_the_back(&pool).await;
    passes_until(&pool, &exec, stop, "reversed").await;
    assert!(attached(&iam, "ml-training").await.is_empty());
    assert_eq!(attached(&iam, "guarded").await, std::slice::from_ref(&deny));
    assert_eq!(instance_state(&ec2, &gpu).await, "running");
    assert_eq!(
        rows(&pool, stop).await,
        [
            row("ec2", &gpu, "g5.xlarge", 1, "restarted"),
            row("iam_role", "ghost", "", 0, "failed"),
            row("iam_role", "guarded", "", 0, "skipped"),
            row("iam_role", "ml-training", "", 0, "restarted"),
        ]
    );
}

/// An Auto Scaling group of one g5.xlarge, tagged for `project` at launch, through moto's
/// Auto Scaling query API (the tests carry no Auto Scaling client); its member's ID.
async fn auto_scaling_member(moto: &str, ec2: &aws_sdk_ec2::Client, project: &str) -> String {
    let client = reqwest::Client::new();
    // moto routes by the signing scope; it does not check the signature.
    let auth = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261126/us-east-1/autoscaling/aws4_request, \
                SignedHeaders=host, Signature=0";
    for body in [
        "Action=CreateLaunchConfiguration&Version=2011-01-01&LaunchConfigurationName=gpu-workers\
         &ImageId=ami-12c6146b&InstanceType=g5.xlarge"
            .to_string(),
        format!(
            "Action=CreateAutoScalingGroup&Version=2011-01-01&AutoScalingGroupName=gpu-workers\
             &LaunchConfigurationName=gpu-workers&MinSize=1&MaxSize=1&DesiredCapacity=1\
             &AvailabilityZones.member.1=us-east-1a&Tags.member.1.Key=project&Tags.member.1.Value={project}\
             &Tags.member.1.PropagateAtLaunch=true"
        ),
    ] {
        let answer = client
            .post(format!("{moto}/"))
            .header("authorization", auth)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("moto answers");
        assert!(
            answer.status().is_success(),
            "{}",
            answer.text().await.unwrap_or_default()
        );
    }
    let out = ec2
        .describe_instances()
        .filters(
            aws_sdk_ec2::types::Filter::builder()
                .name("tag:aws:autoscaling:groupName")
                .values("gpu-workers")
                .build(),
        )
        .send()
        .await
        .expect("members");
    out.reservations()[0].instances()[0]
        .instance_id()
        .expect("id")
        .to_string()
}

#[sqlx::test]
async fn what_a_stop_cannot_stop_safely_is_left_running_with_why(pool: PgPool) {
    let moto = moto::start().await;
    let proxy = AwsProxy::start(&moto.endpoint).await;
    let direct = aws_config_at(&moto.endpoint, "AKIDTEST").await;
    let ec2 = aws_sdk_ec2::Client::new(&direct);
    let plain = launch(&ec2, "gpu-burner", false).await;
    let spot = launch(&ec2, "gpu-burner", true).await;
    let on_instance_store = launch(&ec2, "gpu-burner", false).await;
    let member = auto_scaling_member(&moto.endpoint, &ec2, "gpu-burner").await;
    proxy.with(|s| {
        // <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-requests.html#stop-spot-instances>:
        // only a persistent request's Spot Instance can be stopped; StopInstances on a
        // one-time one is refused with UnsupportedOperation.
        s.refuse.push(Refusal {
            action: "StopInstances".into(),
            naming: spot.clone(),
            code: "UnsupportedOperation".into(),
            message: format!(
                "You can't stop the Spot Instance '{spot}' because it is associated with a one-time Spot Instance request."
            ),
        });
        // <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/RootDeviceStorage.html>: an
        // instance launched from an instance-store-backed AMI reports `instance-store`.
        s.rewrite.push(Rewrite {
            action: "DescribeInstances".into(),
            in_item_with: format!("<instanceId>{on_instance_store}</instanceId>"),
            from: "<rootDeviceType>ebs</rootDeviceType>".into(),
            to: "<rootDeviceType>instance-store</rootDeviceType>".into(),
        });
    });
    seed(&pool, &policy("ec2", ("", ""))).await;
    let exec = resource_executor(&aws_config_at(&proxy.endpoint(), "AKIDTEST").await);

    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    passes_until(&pool, &exec, stop, "executed").await;
    let statuses: Vec<(String, String)> = rows(&pool, stop).await.into_iter().map(|r| (r.1, r.4)).collect();
    let mut expected = vec![
        (plain.clone(), "stopped".to_string()),
        (spot.clone(), "skipped".to_string()),
        (on_instance_store.clone(), "skipped".to_string()),
        (member.clone(), "skipped".to_string()),
    ];
    expected.sort();
    assert_eq!(
        statuses, expected,
        "plain {plain}, spot {spot}, instance store {on_instance_store}, group member {member}"
    );
    assert!(note(&pool, stop, &spot).await.contains("never terminated"));
    assert!(note(&pool, stop, &on_instance_store).await.contains("instance store"));
    assert!(
        note(&pool, stop, &member)
            .await
            .contains("Auto Scaling group \"gpu-workers\"")
    );
    assert_eq!(instance_state(&ec2, &plain).await, "stopped");
    for id in [&spot, &on_instance_store, &member] {
        assert_eq!(instance_state(&ec2, id).await, "running", "{id}");
    }
    // Nothing was terminated, and the group and instance-store instance were never asked.
    assert_eq!(proxy.calls_naming("TerminateInstances", ""), 0);
    assert_eq!(proxy.calls_naming("StopInstances", &member), 0);
    assert_eq!(proxy.calls_naming("StopInstances", &on_instance_store), 0);
}

#[sqlx::test]
async fn a_job_that_vanishes_before_its_stop_call_is_gone_not_failed(pool: PgPool) {
    let fake = SageMakerFake::start().await;
    fake.with(|s| {
        s.training
            .insert("burner-train".into(), job("gpu-burner", "ml.p4d.24xlarge", 1));
    });
    let proxy = AwsProxy::start(&fake.endpoint()).await;
    let (reached, release) = proxy.hold("DescribeTrainingJob");
    seed(&pool, &policy("training_jobs", ("", ""))).await;
    let run = {
        let (pool, exec) = (
            pool.clone(),
            resource_executor(&aws_config_at(&proxy.endpoint(), "AKIDTEST").await),
        );
        tokio::spawn(async move { evaluate_and_act(&pool, today(), &exec).await.expect("evaluate") })
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), reached.notified())
        .await
        .expect("listed");
    // Listed, then removed from AWS before the stop call: SageMaker answers the stop with
    // ValidationException "Requested resource not found.".
    fake.with(|s| s.training.clear());
    release.notify_one();
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the run ends")
        .expect("no panic");

    let stop = action_id(&pool, "gpu-burner", "stop").await;
    let statuses: Vec<String> = rows(&pool, stop).await.into_iter().map(|r| r.4).collect();
    assert_eq!(statuses, ["gone"]);
    assert_eq!(status(&pool, stop).await, "executed");
}
