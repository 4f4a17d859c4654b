//! Owned Savings Plans are read with the plan types AWS itself lists (`GetDimensionValues`,
//! context `SAVINGS_PLANS`), whichever of its two spellings it uses, and a coverage row with
//! an attribute burnrate does not know is skipped, named on the Savings page, and the rest
//! of the read kept.

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::commitments::{account, on_first_of_november, owned_plans, quick};
use super::d;
use burnrate::ingestion::commitments::{Refresh, refresh};
use burnrate::savings::commitments::store;
use burnrate::savings::model::commitments::Offer;

#[sqlx::test]
async fn owned_plans_are_found_in_either_spelling_and_an_unknown_row_is_skipped_and_named(pool: PgPool) {
    let fake = account(&pool).await;
    let ce = crate::common::cost_explorer_at(&fake.endpoint(), "AKIDEXAMPLE").await;
    for (enum_spelling, compute, sagemaker) in [
        (false, "ComputeSavingsPlans", "SageMakerSavingsPlans"),
        (true, "COMPUTE_SP", "SAGEMAKER_SP"),
    ] {
        fake.with(|s| {
            // A Compute plan of $2.4396/h and a SageMaker plan of $0.8448/h, each used in
            // full (see commitments.rs): $1,756.512 and $608.256 committed over 720 hours.
            s.commitments.plans = owned_plans();
            s.commitments.enum_spelling = enum_spelling;
            // The g5 family's coverage row names its family under a key burnrate does not know.
            s.commitments.odd_attribute = Some(("g5".into(), "REGION".into()));
        });
        // Due again: the last read is a day older than the read below.
        sqlx::query("update commitment_reads set read_at = $1 - interval '1 day'")
            .bind(on_first_of_november())
            .execute(&pool)
            .await
            .expect("aged");
        let done = refresh(&pool, &ce, on_first_of_november(), quick())
            .await
            .expect("stored");
        assert!(matches!(done, Refresh::Read { .. }), "{done:?}");

        let stored = store::load(&pool).await.expect("load");
        let plans: Vec<(&str, Decimal)> = stored
            .read
            .uses
            .iter()
            .filter(|u| u.offer == Offer::SavingsPlan)
            .map(|u| (u.id.as_str(), u.commitment_usd))
            .collect();
        assert_eq!(
            plans,
            [(compute, d("1756.512")), (sagemaker, d("608.256"))],
            "spelled {enum_spelling}"
        );
        // The g5 family's row for EC2 and for SageMaker (the fake names both families g5).
        let why = "a Savings Plans coverage row named no instance family (its attributes: REGION), so it was \
                   skipped and the rest kept";
        assert_eq!(stored.read.skipped, [why, why]);
        let families: Vec<&str> = stored.read.coverage.iter().map(|c| c.scope.as_str()).collect();
        assert!(families.contains(&"p3") && !families.contains(&"g5"), "{families:?}");
        // The owned Compute plan is one that covers every EC2 family, in either spelling.
        assert!(burnrate::savings::commitments::covers_every_family(compute, false));
        assert!(burnrate::savings::commitments::covers_every_family(sagemaker, true));
    }
    let asked: Vec<String> = fake.with(|s| s.commitments.requests.clone());
    assert_eq!(asked.iter().filter(|o| *o == "GetDimensionValues").count(), 2);

    // The Savings page names the skipped row.
    let app = crate::common::spawn_app(pool.clone()).await;
    let viewer = app
        .session_for("viewer@example.com", burnrate::auth::Role::Viewer)
        .await;
    let page = app.get_as("/savings", &viewer).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("data-testid=\"commitments-skipped\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("its attributes: REGION"));
}
