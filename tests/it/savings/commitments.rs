//! Commitments that see what is owned: Savings Plans and Reserved Instance coverage and use
//! from the Cost Explorer fake (which applies the owned commitments to its own line items, as
//! AWS documents), subtracted from the steady baseline, with every purchase option priced and
//! AWS's recommendation beside burnrate's. Amounts are worked by hand in the comments.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{d, daily, day, declare, insights, seed};
use crate::common::ce_commitments::{OwnedPlan, OwnedReservation, Recommendation};
use crate::common::ce_fake::{CostExplorerFake, LineItem};
use burnrate::ingestion::commitments::{Refresh, refresh};
use burnrate::ingestion::cost_explorer::Backoff;
use burnrate::savings::Kind;
use burnrate::savings::commitments::{CommitmentUse, OwnedRead, store};
use burnrate::savings::model::commitments::{Offer, Payment, Terms};

const EC2: &str = "Amazon Elastic Compute Cloud - Compute";

fn item(n: u32, project: &str, usage_type: &str, cost: &str, hours: &str) -> LineItem {
    LineItem {
        day: day(n),
        account: "111122223333".into(),
        project: Some(project.into()),
        user: None,
        usage_type: usage_type.into(),
        service: EC2.into(),
        record_type: "Usage".into(),
        unblended: d(cost),
        amortized: d(cost),
        quantity: d(hours),
    }
}

/// A Compute Savings Plan of $2.4396/h and a SageMaker one of $0.8448/h, each 40 % off.
pub(super) fn owned_plans() -> Vec<OwnedPlan> {
    vec![
        OwnedPlan {
            plan_type: "COMPUTE_SP",
            hourly_commitment: d("2.4396"),
            discount: d("0.4"),
        },
        OwnedPlan {
            plan_type: "SAGEMAKER_SP",
            hourly_commitment: d("0.8448"),
            discount: d("0.4"),
        },
    ]
}

pub(super) fn quick() -> Backoff {
    Backoff {
        first_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_attempts: 3,
    }
}

/// 30 days (1–30 October): `api` runs four p3.2xlarge around the clock ($3.06/h on demand),
/// `batch` one g5.xlarge ($1.006/h) and `endpoint` one SageMaker ml.g5.xlarge ($1.408/h).
/// The fake's line items carry the on-demand cost it applies commitments to; the stored bill is
/// what AWS bills once they apply (covered hours at $0: a reservation's `DiscountedUsage`, a
/// plan's usage negated), so the rule must price hours from the catalogue, not the bill.
pub(super) async fn account(pool: &PgPool) -> CostExplorerFake {
    let mut lines = daily("api", "USE1-BoxUsage:p3.2xlarge", 0, 30, "146.88", "96");
    lines.extend(daily("batch", "USE1-BoxUsage:g5.xlarge", 0, 30, "0", "24"));
    lines.extend(daily("endpoint", "USE1-Host:ml.g5.xlarge", 0, 30, "0", "24"));
    seed(pool, &lines).await;
    declare(pool, "api", "serving", None).await;
    declare(pool, "batch", "batch", None).await;
    declare(pool, "endpoint", "serving", None).await;
    let items = (0..30)
        .flat_map(|n| {
            [
                item(n, "api", "USE1-BoxUsage:p3.2xlarge", "293.76", "96"),
                item(n, "batch", "USE1-BoxUsage:g5.xlarge", "24.144", "24"),
                item(n, "endpoint", "USE1-Host:ml.g5.xlarge", "33.792", "24"),
            ]
        })
        .collect();
    let fake = CostExplorerFake::start(items).await;
    fake.with(|s| s.today = Some(day(31)));
    fake
}

/// What a read on 1 November reads: 1–30 October.
pub(super) fn on_first_of_november() -> chrono::DateTime<Utc> {
    Utc.from_utc_datetime(&day(31).and_hms_opt(12, 0, 0).expect("noon"))
}

#[sqlx::test]
async fn owned_plans_and_reservations_come_off_the_baseline_before_anything_is_advised(pool: PgPool) {
    let fake = account(&pool).await;
    // Nothing read yet: p3's baseline is 4 instances, g5's 1, SageMaker g5's 1, each at its
    // catalogue price. p3: 0.6 × 4 × 3.06 × 0.28 × 720 = 1,480.5504; ml.g5: 0.6 × 1 × 1.408 ×
    // 0.28 × 720 = 170.31168; g5: 0.6 × 1 × 1.006 × 0.28 × 720 = 121.68576.
    let before = insights(&pool, 30).await;
    let savings: Vec<(String, Decimal)> = before
        .recommendations
        .iter()
        .filter(|r| r.kind == Kind::Commitment)
        .map(|r| (r.instance_type.clone(), r.monthly_saving))
        .collect();
    assert_eq!(
        savings,
        vec![
            ("p3.*".to_string(), d("1480.5504")),
            ("ml.g5.*".to_string(), d("170.31168")),
            ("g5.*".to_string(), d("121.68576"))
        ]
    );

    // The account owns one p3.2xlarge reservation ($1.82 an hour) and a Compute Savings Plan
    // of $2.4396/h at 40 % off. Reservations apply first: 24 of p3's 96 hours a day. The plan
    // then buys $2.4396 × 24 ÷ 0.6 = $97.584 of on-demand a day: all of g5's $24.144 and
    // $73.44 of p3 (one instance at $3.06 × 24).
    fake.with(|s| {
        s.commitments.reservations.push(OwnedReservation {
            subscription_id: "4f1c2c55-ri".into(),
            instance_type: "p3.2xlarge".into(),
            count: 1,
            hourly_fee: d("1.82"),
        });
        // And a SageMaker plan of $0.8448/h at 40 % off buys $33.792 a day: the endpoint's day.
        s.commitments.plans = owned_plans();
        s.commitments.recommendations.push(Recommendation {
            plan_type: "COMPUTE_SP",
            hourly_commitment: d("4.5"),
            monthly_saving: d("900"),
            saving_percent: d("25"),
        });
        // One row a page, so every paged operation pages.
        s.commitments.page_size = Some(1);
        // The first request is throttled and retried.
        s.throttle_next = 1;
    });
    let ce = crate::common::cost_explorer_at(&fake.endpoint(), "AKIDEXAMPLE").await;
    let done = refresh(&pool, &ce, on_first_of_november(), quick())
        .await
        .expect("stored");
    // Savings Plans coverage: EC2 2 families on 2 pages (+1 throttled), SageMaker 1; reservation
    // coverage 2 types on 2 pages; the plan types AWS lists 1; plan use 2 types (the owned
    // ones); reservation use 1; AWS's advice 2.
    assert_eq!(done, Refresh::Read { requests: 12 });
    let operations = fake.with(|s| s.commitments.requests.clone());
    assert_eq!(operations.len(), 11, "{operations:?}");

    let after = insights(&pool, 30).await;
    let rows: Vec<_> = after
        .recommendations
        .iter()
        .filter(|r| r.kind == Kind::Commitment)
        .collect();
    // p3: 4 − 1 (plan: $73.44 × 30 ÷ $3.06 ÷ 720 h) − 1 (reservation: 720 h ÷ 720 h) = 2
    // uncovered; 0.6 × 2 × 3.06 = $3.672/h committed; × 0.28 × 720 = $740.2752 a month.
    // g5 and ml.g5: the plans cover their one instance each; nothing to advise.
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].instance_type, "p3.*");
    assert_eq!(rows[0].monthly_saving, d("740.2752"));
    // 3.672 × 0.72
    assert!(rows[0].recommended.ends_with("$2.6438/h"), "{}", rows[0].recommended);

    let c = &after.commitments;
    assert_eq!(c.read, Some((day(0), day(30))));
    assert_eq!(c.read_problem, None);
    let p3 = c.families.iter().find(|f| f.family == "p3").expect("p3");
    assert_eq!((p3.baseline, p3.covered, p3.to_commit), (d("4"), d("2"), d("1.2")));
    assert_eq!(
        p3.options.len(),
        12,
        "Savings Plans and Reserved Instances, 1 and 3 years, three payments"
    );
    let all_upfront_ri = p3
        .options
        .iter()
        .find(|o| {
            o.terms
                == Terms {
                    offer: Offer::Reserved,
                    years: 1,
                    payment: Payment::AllUpfront,
                }
        })
        .expect("option");
    // 41 % off: upfront 3.672 × 0.59 × 8760 = 18,978.3648; it pays back in ⌈12 × 0.59⌉ = month 8.
    assert_eq!(all_upfront_ri.upfront, d("18978.3648"));
    assert_eq!(all_upfront_ri.break_even_month, Some(8));
    for family in ["g5", "ml.g5"] {
        let f = c.families.iter().find(|f| f.family == family).expect("family");
        assert_eq!((f.covered, f.to_commit), (d("1"), Decimal::ZERO), "{family}");
    }

    // Every owned commitment is fully used: the Compute plan $2.4396 × 720 = $1,756.512, the
    // SageMaker plan $0.8448 × 720 = $608.256, the reservation 720 h × $1.82 = $1,310.40.
    let owned: Vec<_> = c
        .owned
        .iter()
        .map(|o| (o.offer, o.id.as_str(), o.commitment, o.used, o.underused))
        .collect();
    assert_eq!(
        owned,
        vec![
            (Offer::Reserved, "4f1c2c55-ri", d("1310.4"), d("1310.4"), false),
            // As AWS's SAVINGS_PLANS_TYPE dimension spells them (the fake's default).
            (
                Offer::SavingsPlan,
                "ComputeSavingsPlans",
                d("1756.512"),
                d("1756.512"),
                false
            ),
            (
                Offer::SavingsPlan,
                "SageMakerSavingsPlans",
                d("608.256"),
                d("608.256"),
                false
            ),
        ]
    );
    // The reservation saved 720 h × $3.06 − $1,310.40 = $892.80 against on-demand.
    assert_eq!(c.owned[0].net_savings, d("892.8"));
    assert_eq!(c.owned[0].instance_type, "p3.2xlarge");

    // AWS's plan beside burnrate's $2.64384/h: AWS's commits $1.85616/h more.
    assert_eq!(c.aws.len(), 1);
    assert_eq!(c.aws[0].hourly_commitment, d("4.5"));
    assert_eq!(c.aws[0].burnrate_hourly, d("2.64384"));
    assert_eq!(c.aws[0].saving_share, Some(d("0.25")));
    assert!(
        c.aws[0].difference.contains("$1.8562/h more"),
        "{}",
        c.aws[0].difference
    );

    // Not due again within 20 hours.
    let again = refresh(&pool, &ce, Utc::now(), quick()).await.expect("stored");
    assert_eq!(again, Refresh::NotDue);
}

#[sqlx::test]
async fn a_failed_read_keeps_the_last_figures_and_says_why(pool: PgPool) {
    let fake = account(&pool).await;
    // Read as of the real today: the reservation is reported, its type idle in the period.
    fake.with(|s| {
        s.today = Some(Utc::now().date_naive());
        s.commitments.reservations.push(OwnedReservation {
            subscription_id: "ri-1".into(),
            instance_type: "p3.2xlarge".into(),
            count: 1,
            hourly_fee: d("1.82"),
        })
    });
    let ce = crate::common::cost_explorer_at(&fake.endpoint(), "AKIDEXAMPLE").await;
    let first = refresh(&pool, &ce, Utc::now(), quick()).await.expect("stored");
    assert!(matches!(first, Refresh::Read { .. }), "{first:?}");
    let period = store::load(&pool).await.expect("load").read.period;
    assert!(period.is_some());

    // A day later AWS refuses: the permission was taken away.
    sqlx::query("update commitment_reads set read_at = read_at - interval '1 day'")
        .execute(&pool)
        .await
        .expect("aged");
    fake.with(|s| {
        s.fail_next = Some((
            "AccessDeniedException".into(),
            "User is not authorized to perform: ce:GetSavingsPlansCoverage".into(),
        ))
    });
    let failed = refresh(&pool, &ce, Utc::now(), quick()).await.expect("stored");
    let Refresh::Failed { requests, problem } = failed else {
        panic!("expected a failure, got {failed:?}");
    };
    assert_eq!(requests, 1);
    assert!(problem.contains("AccessDeniedException"), "{problem}");
    let stored = store::load(&pool).await.expect("load");
    assert_eq!(stored.read.period, period);
    assert_eq!(stored.read.uses.len(), 1, "the last good figures stay");
    assert_eq!(stored.problem.as_deref(), Some(problem.as_str()));
    let found = insights(&pool, 30).await;
    assert!(
        found
            .commitments
            .read_problem
            .as_deref()
            .is_some_and(|p| p.contains("ce:GetSavingsPlansCoverage")),
        "{:?}",
        found.commitments.read_problem
    );
    // Not tried again on every ingestion: three hours on, it is; a good read clears the problem.
    assert_eq!(
        refresh(&pool, &ce, Utc::now(), quick()).await.expect("stored"),
        Refresh::NotDue
    );
    sqlx::query("update commitment_reads set attempted_at = attempted_at - interval '3 hours'")
        .execute(&pool)
        .await
        .expect("aged");
    assert!(matches!(
        refresh(&pool, &ce, Utc::now(), quick()).await.expect("stored"),
        Refresh::Read { .. }
    ));
    assert_eq!(store::load(&pool).await.expect("load").problem, None);
}

#[sqlx::test]
async fn an_underused_plan_is_flagged_and_holds_back_more_of_the_same(pool: PgPool) {
    // p3 as above, 4 instances around the clock; nothing covers them, yet the organisation's
    // Compute plans were 70 % used over the 30 days (hour by hour their use can fall short of
    // a daily baseline): $1,000 committed, $700 used.
    let lines = daily("api", "USE1-BoxUsage:p3.2xlarge", 0, 30, "293.76", "96");
    seed(&pool, &lines).await;
    declare(&pool, "api", "serving", None).await;
    let read = OwnedRead {
        skipped: Vec::new(),
        period: Some((day(0), day(30))),
        coverage: Vec::new(),
        uses: vec![CommitmentUse {
            offer: Offer::SavingsPlan,
            id: "COMPUTE_SP".into(),
            instance_type: String::new(),
            commitment_usd: d("1000"),
            used_usd: d("700"),
            net_savings_usd: d("120"),
        }],
        aws: Vec::new(),
    };
    let mut conn = pool.acquire().await.expect("conn");
    store::replace(&mut conn, &read).await.expect("stored");
    drop(conn);
    let found = insights(&pool, 30).await;
    assert!(
        found.recommendations.iter().all(|r| r.kind != Kind::Commitment),
        "no new plan while one is underused"
    );
    let c = &found.commitments;
    assert!(c.owned[0].underused);
    // $300 unused in 720 hours: $300 a 30 days.
    assert_eq!(c.owned[0].unused_per_30_days, d("300"));
    let p3 = &c.families[0];
    assert_eq!(p3.to_commit, d("2.4"));
    assert!(
        p3.held_back
            .as_deref()
            .is_some_and(|w| w.contains("COMPUTE_SP plans are 70.0% used")),
        "{:?}",
        p3.held_back
    );
}

#[sqlx::test]
async fn the_savings_page_shows_what_is_owned_and_the_options_with_aws_text_escaped(pool: PgPool) {
    let lines = daily("api", "USE1-BoxUsage:p3.2xlarge", 0, 30, "293.76", "96");
    seed(&pool, &lines).await;
    declare(&pool, "api", "serving", None).await;
    // A subscription ID is AWS's text, and so untrusted.
    let hostile = "ri-<img src=x onerror=alert(1)>";
    let read = OwnedRead {
        skipped: Vec::new(),
        period: Some((day(0), day(30))),
        coverage: Vec::new(),
        uses: vec![CommitmentUse {
            offer: Offer::Reserved,
            id: hostile.into(),
            instance_type: "p3.2xlarge".into(),
            commitment_usd: d("1310.4"),
            used_usd: d("655.2"),
            net_savings_usd: d("0"),
        }],
        aws: Vec::new(),
    };
    let mut conn = pool.acquire().await.expect("conn");
    store::replace(&mut conn, &read).await.expect("stored");
    store::record_problem(&mut conn, "ThrottlingException: Rate exceeded")
        .await
        .expect("problem");
    drop(conn);
    let app = crate::common::spawn_app(pool.clone()).await;
    let viewer = app
        .session_for("viewer@example.com", burnrate::auth::Role::Viewer)
        .await;
    let page = app.get_as("/savings", &viewer).await;
    assert_eq!(page.status, 200);
    let body = &page.body;
    assert!(
        body.contains("data-testid=\"owned-row\" data-underused=\"true\""),
        "{body}"
    );
    assert!(body.contains("ri-&lt;img src=x onerror=alert(1)&gt;"), "escaped");
    assert!(!body.contains("<img src=x"), "never raw");
    // Half used: $655.20 unused in 720 hours.
    assert!(body.contains("50.0%") && body.contains("$655.20"), "{body}");
    assert!(
        body.contains("ThrottlingException: Rate exceeded"),
        "the failed read is named"
    );
    // p3's options: the 1-year no-upfront plan breaks even at once, 3-year all upfront later.
    assert!(body.contains("1-year no upfront Savings Plan"), "{body}");
    assert!(body.contains("month 1 (immediate)"), "{body}");
    assert!(body.contains("3-year all upfront Reserved Instances"), "{body}");
}
