//! `burnrate doctor` as an operator runs it: the real binary and SDK against moto (STS,
//! Budgets, EC2), the Cost Explorer and SageMaker fakes, the CloudWatch front, and an IAM
//! policy simulator fake, all behind one endpoint that routes by the signature's service.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;

use crate::common::ce_fake::CostExplorerFake;
use crate::common::cloudwatch_front;
use crate::common::moto::{self, Moto};
use crate::common::recording;
use crate::common::sagemaker_fake::SageMakerFake;
use crate::common::{aws_config_at, burnrate_command};

/// What the simulator fake was asked, and which actions it answers `implicitDeny` for.
#[derive(Default)]
struct Simulator {
    deny: Vec<String>,
    /// (PolicySourceArn, ActionNames, ContextEntries key=value) of each call.
    asked: Vec<(String, Vec<String>, Vec<String>)>,
    /// Every ResourceArns member asked about.
    resources: Vec<String>,
}

/// IAM's `SimulatePrincipalPolicy` in the query protocol's XML
/// (<https://docs.aws.amazon.com/IAM/latest/APIReference/API_SimulatePrincipalPolicy.html>):
/// one `EvaluationResults` member per action asked, `allowed` unless told to deny it.
async fn simulate(
    State(state): State<Arc<Mutex<Simulator>>>,
    axum::extract::Form(form): axum::extract::Form<Vec<(String, String)>>,
) -> axum::response::Response {
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    if field("Action").as_deref() != Some("SimulatePrincipalPolicy") {
        return (StatusCode::BAD_REQUEST, "only SimulatePrincipalPolicy").into_response();
    }
    let actions: Vec<String> = form
        .iter()
        .filter(|(k, _)| k.starts_with("ActionNames.member."))
        .map(|(_, v)| v.clone())
        .collect();
    let context: Vec<String> = (1..)
        .map_while(|n| {
            let key = field(&format!("ContextEntries.member.{n}.ContextKeyName"))?;
            let value = field(&format!("ContextEntries.member.{n}.ContextKeyValues.member.1")).unwrap_or_default();
            Some(format!("{key}={value}"))
        })
        .collect();
    let resources: Vec<String> = form
        .iter()
        .filter(|(k, _)| k.starts_with("ResourceArns.member."))
        .map(|(_, v)| v.clone())
        .collect();
    let mut state = state.lock().expect("simulator");
    state
        .asked
        .push((field("PolicySourceArn").unwrap_or_default(), actions.clone(), context));
    state.resources.extend(resources.iter().cloned());
    let members: String = actions
        .iter()
        .map(|action| {
            // docs/ENFORCEMENT.md scopes burnrate's IAM statements to its policy path and to roles:
            // asked about `*` (no ResourceArns), IAM would not match them.
            let unscoped = action.starts_with("iam:") && resources.is_empty();
            let decision = if state.deny.contains(action) || unscoped {
                "implicitDeny"
            } else {
                "allowed"
            };
            format!(
                "<member><EvalActionName>{action}</EvalActionName><EvalResourceName>*</EvalResourceName>\
                 <EvalDecision>{decision}</EvalDecision></member>"
            )
        })
        .collect();
    let xml = format!(
        "<SimulatePrincipalPolicyResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\">\
         <SimulatePrincipalPolicyResult><IsTruncated>false</IsTruncated><EvaluationResults>{members}\
         </EvaluationResults></SimulatePrincipalPolicyResult><ResponseMetadata><RequestId>doctor</RequestId>\
         </ResponseMetadata></SimulatePrincipalPolicyResponse>"
    );
    ([("content-type", "text/xml")], xml).into_response()
}

struct Account {
    moto: Moto,
    _ce: CostExplorerFake,
    _sagemaker: SageMakerFake,
    _cloudwatch: cloudwatch_front::Front,
    simulator: Arc<Mutex<Simulator>>,
    endpoint: String,
    instance: String,
}

/// An account with one EC2 instance tagged `project=vision` and one burnrate budget whose
/// filter names the tag `project`, behind one endpoint.
async fn account() -> Account {
    let moto = moto::start().await;
    let ce = CostExplorerFake::start(Vec::new()).await;
    let sagemaker = SageMakerFake::start().await;
    let cloudwatch = cloudwatch_front::front(&moto, 100_800, 0).await;
    let simulator = Arc::new(Mutex::new(Simulator::default()));
    let iam = recording::serve(
        "iam_simulator",
        axum::Router::new()
            .route("/", axum::routing::post(simulate))
            .with_state(simulator.clone()),
    )
    .await;
    let iam = format!("http://{iam}");
    let endpoint = recording::front_by_service(
        "doctor",
        &moto.endpoint,
        &[
            ("ce", &ce.endpoint()),
            ("sagemaker", &sagemaker.endpoint()),
            ("tagging", &sagemaker.endpoint()),
            ("application-autoscaling", &sagemaker.endpoint()),
            ("monitoring", &cloudwatch.endpoint),
            ("iam", &iam),
        ],
    )
    .await;
    let sdk = aws_config_at(&endpoint, "AKIDDOCTOR").await;
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let launched = ec2
        .run_instances()
        .image_id("ami-12c6146b")
        .instance_type(aws_sdk_ec2::types::InstanceType::P32xlarge)
        .min_count(1)
        .max_count(1)
        .tag_specifications(
            aws_sdk_ec2::types::TagSpecification::builder()
                .resource_type(aws_sdk_ec2::types::ResourceType::Instance)
                .tags(
                    aws_sdk_ec2::types::Tag::builder()
                        .key("project")
                        .value("vision")
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("moto runs an instance");
    let instance = launched.instances()[0].instance_id().expect("id").to_string();
    let filter = burnrate::aws::budgets::tag_filter("project", &["vision".to_string()]);
    aws_sdk_budgets::Client::new(&sdk)
        .create_budget()
        .account_id("123456789012")
        .budget(
            aws_sdk_budgets::types::Budget::builder()
                .budget_name("burnrate-7")
                .budget_type(aws_sdk_budgets::types::BudgetType::Cost)
                .time_unit(aws_sdk_budgets::types::TimeUnit::Monthly)
                .budget_limit(
                    aws_sdk_budgets::types::Spend::builder()
                        .amount("1000")
                        .unit("USD")
                        .build()
                        .expect("spend"),
                )
                .filter_expression(filter)
                .build()
                .expect("budget"),
        )
        .send()
        .await
        .expect("moto makes the budget");
    Account {
        moto,
        _ce: ce,
        _sagemaker: sagemaker,
        _cloudwatch: cloudwatch,
        simulator,
        endpoint,
        instance,
    }
}

/// `burnrate doctor` against the account, with `tag` as the project tag key: (exit code, stdout).
async fn doctor(account: &Account, tag: &str) -> (Option<i32>, String) {
    let mut command = burnrate_command("postgres://postgres@127.0.0.1:1/unused");
    command
        .arg("doctor")
        .env("AWS_ENDPOINT_URL", &account.endpoint)
        .env("AWS_ACCESS_KEY_ID", "AKIDDOCTOR")
        .env("AWS_SECRET_ACCESS_KEY", "doctor-secret")
        .env("AWS_REGION", "us-east-1")
        .env("BURNRATE_TAG_PROJECT", tag);
    // The fakes run on this test's runtime: wait for the process off it.
    let output = tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("joined");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test]
async fn doctor_names_the_one_permission_the_role_lacks_and_changes_nothing() {
    let account = account().await;
    account
        .simulator
        .lock()
        .expect("simulator")
        .deny
        .push("sagemaker:DeleteEndpoint".into());
    let (code, out) = doctor(&account, "project").await;
    assert_eq!(code, Some(1), "{out}");
    let failures: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(failures.len(), 1, "{out}");
    assert!(failures[0].contains("sagemaker:DeleteEndpoint"), "{out}");
    assert!(failures[0].contains("policy simulator: implicitDeny"), "{out}");
    // EC2's calls were asked by dry run on the tagged instance, not simulated.
    let dry_run = format!("dry run: allowed on {}", account.instance);
    for call in ["ec2:StopInstances", "ec2:StartInstances"] {
        assert!(out.lines().any(|l| l.contains(call) && l.contains(&dry_run)), "{out}");
    }
    assert!(
        out.lines()
            .any(|l| l.contains("budgets:ViewBudget") && l.contains("read back") && l.contains("burnrate-7")),
        "{out}"
    );
    // The simulator was asked about the identity, with the project tag as its context.
    let asked = account.simulator.lock().expect("simulator").asked.clone();
    let delete = asked
        .iter()
        .find(|(_, actions, _)| actions.iter().any(|a| a == "sagemaker:DeleteEndpoint"))
        .expect("asked about DeleteEndpoint");
    assert_eq!(delete.0, "arn:aws:sts::123456789012:user/moto");
    assert_eq!(delete.2, ["aws:ResourceTag/project=burnrate-doctor"]);
    // IAM's actions were asked about burnrate's own policy path and a role, as docs/ENFORCEMENT.md
    // scopes them; asked about `*` the fake denies them, and the run would show it.
    let resources = account.simulator.lock().expect("simulator").resources.clone();
    assert!(
        resources.contains(&"arn:aws:iam::123456789012:policy/burnrate/burnrate-deny-doctor".to_string()),
        "{resources:?}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok") && l.contains("sagemaker:ListTags")),
        "{out}"
    );
    // Nothing changed: the instance still runs.
    let sdk = aws_config_at(&account.moto.endpoint, "AKIDDOCTOR").await;
    let state = aws_sdk_ec2::Client::new(&sdk)
        .describe_instances()
        .instance_ids(&account.instance)
        .send()
        .await
        .expect("described");
    let name = state.reservations()[0].instances()[0]
        .state()
        .and_then(|s| s.name())
        .cloned();
    assert_eq!(name, Some(aws_sdk_ec2::types::InstanceStateName::Running));

    account.simulator.lock().expect("simulator").deny.clear();
    let (code, out) = doctor(&account, "project").await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("every check passed"), "{out}");
}

#[tokio::test]
async fn doctor_fails_a_budget_whose_filter_names_another_tag_key() {
    let account = account().await;
    let (code, out) = doctor(&account, "team").await;
    assert_eq!(code, Some(1), "{out}");
    let failures: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(failures.len(), 1, "{out}");
    assert!(
        failures[0].contains("burnrate-7 filters on the tag \"project\""),
        "{out}"
    );
    assert!(failures[0].contains("BURNRATE_TAG_PROJECT is \"team\""), "{out}");
}
