//! A credentials provider that fails (IMDS, IRSA's web identity, STS and SSO all have
//! passing outages) is a passing fault: a stop through an AWS Budgets action is never
//! recorded failed for it and runs once credentials come back, and a lift that meets one is
//! carried out on a later pass, so an approved project is never left stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_credential_types::Credentials;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future};
use burnrate::aws::budgets::AwsBudgets;
use burnrate::enforcement::evaluate::evaluate_and_act;
use burnrate::enforcement::reconcile;
use sqlx::PgPool;

use crate::common::budget_actions_fake::BudgetActionsFake;
use crate::common::enforcement::{
    AUTOMATIC_IAM, action_id, approve_behind_the_back, executor, last_message, seed, status, today,
};

/// Credentials that fail while `failing` is above zero (one failure used per ask), as an
/// instance-metadata endpoint that does not answer.
#[derive(Debug, Clone, Default)]
struct Flaky {
    failing: Arc<AtomicUsize>,
}

impl ProvideCredentials for Flaky {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        let fail = self
            .failing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        future::ProvideCredentials::ready(if fail {
            Err(CredentialsError::provider_timed_out(std::time::Duration::from_secs(1)))
        } else {
            Ok(Credentials::new("AKIDTEST", "secret", None, None, "flaky"))
        })
    }
}

async fn audited(pool: &PgPool, stop: i64) -> Vec<String> {
    sqlx::query_scalar("select event from enforcement_audit where action_id = $1 order by id")
        .bind(stop)
        .fetch_all(pool)
        .await
        .expect("audit")
}

#[sqlx::test]
async fn a_budgets_action_stop_and_its_lift_survive_a_failing_credentials_provider(pool: PgPool) {
    seed(&pool, AUTOMATIC_IAM).await;
    let fake = BudgetActionsFake::start().await;
    let mut exec = executor(&fake, None).await;
    let flaky = Flaky::default();
    let sdk = crate::common::aws_config_at(&fake.endpoint(), "AKIDTEST")
        .await
        .into_builder()
        .credentials_provider(SharedCredentialsProvider::new(flaky.clone()))
        // Every call asks the provider: no cached credentials hide an outage.
        .identity_cache(aws_config::identity::IdentityCache::no_cache())
        .build();
    exec.aws = Some(Arc::new(AwsBudgets::new(&sdk, "123456789012".into())));
    evaluate_and_act(&pool, today(), &exec).await.expect("evaluate");
    let stop = action_id(&pool, "gpu-burner", "stop").await;
    fake.breach(&format!("burnrate-enforce-{stop}"));

    // The provider fails through a whole pass (the SDK's own retries included).
    flaky.failing.store(1_000, Ordering::SeqCst);
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "proposed");
    assert!(
        last_message(&pool, stop).await.contains("next pass"),
        "{}",
        last_message(&pool, stop).await
    );
    flaky.failing.store(0, Ordering::SeqCst);
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "executing");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "executed");

    // Approved while the provider fails: the lift waits, it is not lost.
    approve_behind_the_back(&pool).await;
    flaky.failing.store(1_000, Ordering::SeqCst);
    reconcile::pass(&pool, &exec, today()).await.expect("pass");
    assert_eq!(status(&pool, stop).await, "executed");
    flaky.failing.store(0, Ordering::SeqCst);
    reconcile::pass(&pool, &exec, today()).await.expect("lift");
    assert_eq!(status(&pool, stop).await, "reversing");
    fake.finish();
    reconcile::pass(&pool, &exec, today()).await.expect("poll");
    assert_eq!(status(&pool, stop).await, "reversed");
    assert!(
        !audited(&pool, stop).await.iter().any(|e| e == "failed"),
        "{:?}",
        audited(&pool, stop).await
    );
}
