//! Each recommendation's formula at its edges, with exact amounts computed here by hand
//! from the seeded figures (never by the code under test).

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{Line, d, daily, day, declare, insights, seed};
use burnrate::savings::Kind;

fn only(found: &burnrate::savings::insights::Insights, kind: Kind) -> Vec<&burnrate::savings::Recommendation> {
    found.recommendations.iter().filter(|r| r.kind == kind).collect()
}

#[sqlx::test]
async fn spot_uses_the_default_discount_then_the_one_seen_in_the_data(pool: PgPool) {
    // 10 days of on-demand p4d for a training project: $219.576 and 10 hours a day.
    seed(
        &pool,
        &daily("trainer", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
    )
    .await;
    declare(&pool, "trainer", "training", None).await;
    let found = insights(&pool, 30).await;
    let spot = only(&found, Kind::Spot);
    assert_eq!(spot.len(), 1);
    let r = spot[0];
    assert_eq!(r.basis_cost, Some(d("2195.76")));
    assert_eq!((r.from, r.to), (day(0), day(10)));
    // 2195.76 × 0.65 × 30 / 10
    assert_eq!(r.monthly_saving, d("4281.732"));

    // Another project ran p4d on spot at $6.5873/h: the observed discount replaces 65 %.
    seed(
        &pool,
        &[
            daily("trainer", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
            daily("sweeps", "USE1-SpotUsage:p4d.24xlarge", 0, 10, "65.873", "10"),
        ]
        .concat(),
    )
    .await;
    let found = insights(&pool, 30).await;
    let r = only(&found, Kind::Spot)[0].clone();
    // discount = 1 − 6.5873 / 21.9576; saving = 2195.76 × discount × 3
    let discount = Decimal::ONE - d("6.5873") / d("21.9576");
    assert_eq!(r.monthly_saving, d("2195.76") * discount * Decimal::from(3));
    assert!(r.detail.contains("observed"), "{}", r.detail);
}

#[sqlx::test]
async fn serving_never_goes_to_spot_but_sagemaker_training_always_may(pool: PgPool) {
    seed(
        &pool,
        &[
            daily("endpoint", "USE1-BoxUsage:g5.xlarge", 0, 7, "24.144", "24"),
            daily("endpoint", "USE1-Train:ml.g5.xlarge", 0, 7, "14.08", "10"),
            daily("mystery", "USE1-BoxUsage:g5.xlarge", 0, 7, "24.144", "24"),
        ]
        .concat(),
    )
    .await;
    declare(&pool, "endpoint", "serving", None).await;
    let found = insights(&pool, 30).await;
    let spot = only(&found, Kind::Spot);
    // The serving project's EC2 box is not proposed, nor the undeclared project's; its
    // SageMaker training job is training whatever the project says.
    assert_eq!(spot.len(), 1, "{spot:?}");
    assert_eq!(spot[0].usage_type, "USE1-Train:ml.g5.xlarge");
    assert_eq!(
        spot[0].monthly_saving,
        d("98.56") * d("0.65") * Decimal::from(30) / Decimal::from(7)
    );
}

#[sqlx::test]
async fn the_window_is_the_last_settled_days_with_data(pool: PgPool) {
    seed(
        &pool,
        &daily("trainer", "USE1-BoxUsage:p4d.24xlarge", 0, 40, "100", "4"),
    )
    .await;
    declare(&pool, "trainer", "training", None).await;
    // AWS flags the whole open month Estimated, but only days inside the restatement window
    // (3 days) are provisional and left out of the window.
    sqlx::query("update daily_project_costs set estimated = true where day >= $1")
        .bind(day(31))
        .execute(&pool)
        .await
        .expect("estimated");
    // As an ingestion on `today` records it: its restatement window began three days back.
    let as_of = |today: u32| {
        let pool = pool.clone();
        async move {
            sqlx::query(
                "insert into settlement (id, window_from) values (true, $1)
                 on conflict (id) do update set window_from = excluded.window_from",
            )
            .bind(day(today - 3))
            .execute(&pool)
            .await
            .expect("fetched");
            burnrate::savings::insights::compute(&pool, 30, Default::default(), chrono::Utc::now()).await
        }
    };
    let found = as_of(41).await.expect("insights");
    let window = found.window.expect("window");
    assert_eq!(
        (window.from, window.to),
        (day(8), day(38)),
        "days 38 and 39 are provisional"
    );
    let r = only(&found, Kind::Spot)[0];
    assert_eq!(r.basis_cost, Some(d("3000")));
    assert_eq!(r.monthly_saving, d("1950"));
    // Three days on, the same Estimated days are older than the window: settled.
    let later = as_of(44).await.expect("insights");
    let window = later.window.expect("window");
    assert_eq!((window.from, window.to), (day(10), day(40)));
}

#[sqlx::test]
async fn a_7b_model_on_g6_12xlarge_is_rightsized_to_one_l4_and_7b_training_only_where_it_fits(pool: PgPool) {
    seed(
        &pool,
        &[
            daily("chat", "USE1-BoxUsage:g6.12xlarge", 0, 10, "110.4384", "24"),
            daily("big", "USE1-BoxUsage:g6.12xlarge", 0, 10, "110.4384", "24"),
            daily("tuner", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
        ]
        .concat(),
    )
    .await;
    declare(&pool, "chat", "serving", Some(("7", "bf16"))).await;
    // 70B bf16 needs 156.5 GiB: more than the 96 GiB it runs on, so it is sharded; no advice.
    declare(&pool, "big", "serving", Some(("70", "bf16"))).await;
    // 7B training with Adam needs 7 × 16 × 1.2 = 125.2 GiB: not g6.12xlarge (96 GiB), which
    // the old rule (7 × 2 × 4 = 52.2 GiB) chose for a claimed 79 % saving; the cheapest
    // NVIDIA bf16 fit is g6e.12xlarge (4 × 48 GiB L40S, $10.49264/h).
    declare(&pool, "tuner", "training", Some(("7", "bf16"))).await;
    let found = insights(&pool, 30).await;
    let rightsize = only(&found, Kind::Rightsize);
    assert_eq!(rightsize.len(), 2, "{rightsize:?}");
    let chat = rightsize.iter().find(|r| r.project == "chat").expect("chat");
    assert_eq!(chat.recommended, "g6.xlarge");
    // 1104.384 × (1 − 0.8048 / 4.6016) × 3
    assert_eq!(
        chat.monthly_saving,
        d("1104.384") * (Decimal::ONE - d("0.8048") / d("4.6016")) * Decimal::from(3)
    );
    assert!(chat.detail.contains("needs 15.6 GiB"), "{}", chat.detail);
    assert!(chat.detail.contains("Neuron alternative inf2"), "{}", chat.detail);
    // Spot on the same usage counts after the right-size: 65 % of the smaller type's cost.
    let spot = only(&found, Kind::Spot);
    let tuner_spot = spot.iter().find(|r| r.project == "tuner").expect("tuner spot");
    assert_eq!(
        tuner_spot.monthly_saving.round_dp(10),
        (d("2195.76") * d("0.65") * (d("10.49264") / d("21.957642")) * Decimal::from(3)).round_dp(10)
    );
    assert!(
        tuner_spot.detail.contains("counted after rightsize"),
        "{}",
        tuner_spot.detail
    );
    let tuner = rightsize.iter().find(|r| r.project == "tuner").expect("tuner");
    assert_eq!(tuner.recommended, "g6e.12xlarge");
    assert_eq!(
        tuner.monthly_saving,
        d("2195.76") * (Decimal::ONE - d("10.49264") / d("21.957642")) * Decimal::from(3)
    );
    assert!(tuner.detail.contains("needs 125.2 GiB"), "{}", tuner.detail);
    // Across kinds the same order holds: the right-size adds its own saving, spot what the
    // smaller type leaves, and the tuner's rows together stay within its spend.
    // Equal to 10 places: the share taken of the whole spend recurs in its last digit.
    assert_eq!(tuner.compounded_saving.round_dp(10), tuner.monthly_saving.round_dp(10));
    assert_eq!(
        tuner_spot.compounded_saving.round_dp(10),
        tuner_spot.monthly_saving.round_dp(10)
    );
    let tuner_total: Decimal = found
        .recommendations
        .iter()
        .filter(|r| r.project == "tuner")
        .map(|r| r.compounded_saving)
        .sum();
    assert!(tuner_total <= d("2195.76") * Decimal::from(3), "{tuner_total}");
}

#[sqlx::test]
async fn always_on_needs_23_hours_per_instance_every_day(pool: PgPool) {
    let mut lines = daily("lab", "USE1-Notebk:ml.g5.12xlarge", 0, 14, "340.32", "48");
    // A dev box on EC2 that was switched off for part of one day: not always on.
    lines.extend(daily("dev-box", "USE1-BoxUsage:g5.xlarge", 0, 14, "24.144", "24"));
    lines.push(Line(
        "dev-box",
        "USE1-BoxUsage:g5.xlarge",
        day(14),
        d("22.132"),
        d("22"),
    ));
    lines.push(Line("lab", "USE1-Notebk:ml.g5.12xlarge", day(14), d("340.32"), d("48")));
    seed(&pool, &lines).await;
    declare(&pool, "dev-box", "dev", None).await;
    declare(&pool, "lab", "serving", None).await;
    let found = insights(&pool, 30).await;
    let always = only(&found, Kind::AlwaysOn);
    assert_eq!(always.len(), 1, "{always:?}");
    let r = always[0];
    assert_eq!(r.project, "lab");
    // 15 days × 340.32 × 108/168 × 30/15
    let basis = d("5104.80");
    assert_eq!(r.basis_cost, Some(basis));
    // Equal to 10 decimal places: 108/168 recurs, so the last of 28 digits depends on the order.
    assert_eq!(
        r.monthly_saving.round_dp(10),
        (basis * Decimal::from(108) / Decimal::from(168) * Decimal::from(2)).round_dp(10)
    );
    assert!(r.detail.starts_with("2 × g5.12xlarge"), "{}", r.detail);
}

#[sqlx::test]
async fn commitments_cover_60_percent_of_the_tenth_percentile(pool: PgPool) {
    // 20 days: g5 on-demand hours 48 on 18 days, 0 on two days. p10 of 20 days is the 2nd
    // smallest value: 0, so no commitment. With one quiet day, p10 is 48.
    let mut lines = daily("api", "USE1-BoxUsage:g5.xlarge", 0, 18, "48.288", "48");
    lines.push(Line("api", "USE1-EBS:VolumeUsage.gp3", day(19), d("1"), d("1")));
    seed(&pool, &lines).await;
    declare(&pool, "api", "serving", None).await;
    assert!(only(&insights(&pool, 30).await, Kind::Commitment).is_empty());

    let mut lines = daily("api", "USE1-BoxUsage:g5.xlarge", 0, 19, "48.288", "48");
    lines.push(Line("api", "USE1-EBS:VolumeUsage.gp3", day(19), d("1"), d("1")));
    lines.extend(daily("api", "USE1-HeavyUsage:g5.xlarge", 0, 20, "20", "24"));
    seed(&pool, &lines).await;
    let found = insights(&pool, 30).await;
    let commitment = only(&found, Kind::Commitment);
    assert_eq!(commitment.len(), 1);
    let r = commitment[0];
    assert_eq!(r.instance_type, "g5.*");
    assert_eq!(r.basis_cost, None);
    // baseline 48 / 24 = 2 instances at $1.006/h; 0.6 × 2 × 1.006 × 0.28 × 720
    assert_eq!(
        r.monthly_saving,
        d("0.6") * d("2") * d("1.006") * d("0.28") * Decimal::from(720)
    );
    // Nothing read from Cost Explorer: nothing owned is subtracted.
    assert!(r.detail.contains("owned commitments cover 0 of them"), "{}", r.detail);
}

#[sqlx::test]
async fn savings_available_adds_what_each_row_adds_after_the_others(pool: PgPool) {
    // A training project on one g5.xlarge on demand around the clock for 30 days: spot
    // moves it off on-demand prices, and a Savings Plan for the g5 family proposes to cover
    // the same steady hour. Each alone saves; together the commitment has nothing left on
    // demand to cover.
    seed(
        &pool,
        &daily("trainer", "USE1-BoxUsage:g5.xlarge", 0, 30, "24.144", "24"),
    )
    .await;
    declare(&pool, "trainer", "training", None).await;
    let found = insights(&pool, 30).await;
    let spot = only(&found, Kind::Spot)[0].clone();
    let commitment = only(&found, Kind::Commitment)[0].clone();
    // 30 × 24.144 × 0.65
    assert_eq!(spot.monthly_saving, d("470.808"));
    assert_eq!(spot.compounded_saving, d("470.808"));
    assert!(commitment.monthly_saving > Decimal::ZERO);
    assert_eq!(commitment.compounded_saving, Decimal::ZERO);
    // What the Overview says: the compounded total, not spot + commitment.
    let available = burnrate::savings::service::available(&pool, &found, None, None)
        .await
        .expect("available");
    assert_eq!(available.count, 2);
    assert_eq!(available.monthly_saving, d("470.808"));
}
