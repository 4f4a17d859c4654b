use std::str::FromStr;

use super::*;

fn d(text: &str) -> Decimal {
    Decimal::from_str(text).expect("decimal")
}

/// Unblended `u`, amortized `a`, no GPU.
fn amounts(u: &str, a: &str) -> Amounts {
    Amounts {
        unblended: d(u),
        amortized: d(a),
        ..Amounts::default()
    }
}

const ML: i64 = 1;
const PLATFORM: i64 = 2;
const WEB: i64 = 3;

fn owned(project: &str, team: i64, u: &str) -> ProjectDay {
    ProjectDay {
        project: project.into(),
        team: Some(team),
        amounts: amounts(u, u),
        ..ProjectDay::default()
    }
}

fn unowned(project: &str, u: &str, users: &[(&str, Option<i64>, &str)], services: &[(&str, &str)]) -> ProjectDay {
    ProjectDay {
        project: project.into(),
        team: None,
        amounts: amounts(u, u),
        users: users
            .iter()
            .map(|(n, t, c)| UserShare {
                user: n.to_string(),
                team: *t,
                net: d(c),
                ..UserShare::default()
            })
            .collect(),
        services: services.iter().map(|(n, c)| (n.to_string(), d(c))).collect(),
        ..ProjectDay::default()
    }
}

fn rule(id: i64, split: SplitKind) -> Rule {
    Rule {
        id,
        untagged: false,
        projects: vec![],
        services: vec![],
        split,
        teams: vec![],
    }
}

/// (team, source, rule, project, user, unblended) of one row.
type Summary = (Option<i64>, &'static str, Option<i64>, String, String, Decimal);

/// Each row's summary, sorted.
fn summary(rows: &[Allocated]) -> Vec<Summary> {
    let mut out: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.team,
                r.source.key(),
                r.rule,
                r.project.clone(),
                r.user.clone(),
                r.amounts.unblended,
            )
        })
        .collect();
    out.sort();
    out
}

fn total(rows: &[Allocated]) -> Amounts {
    let mut sum = Amounts::default();
    for row in rows {
        sum.add(&row.amounts);
    }
    sum
}

#[test]
fn each_precedence_step_claims_only_what_the_steps_before_it_left() {
    let projects = [
        owned("train", ML, "100.00"),
        // An unowned project: alice (ml) spent 30 of 60 in the user grain, bob (no team) 20,
        // and 10 had no user tag.
        unowned(
            "sandbox",
            "60.00",
            &[("alice", Some(ML), "30"), ("bob", None, "20"), ("", None, "10")],
            &[],
        ),
        // Untagged spend with nobody's user tag, and a project no rule names.
        unowned("", "9.00", &[("", None, "9")], &[]),
        unowned("orphan", "5.00", &[], &[]),
    ];
    let mut untagged = rule(7, SplitKind::Even);
    untagged.untagged = true;
    untagged.teams = vec![(ML, Decimal::ZERO), (PLATFORM, Decimal::ZERO)];
    let rows = allocate_day(&projects, &[untagged], &[ML, PLATFORM, WEB]);
    let s = |t: Option<i64>, src: &'static str, r: Option<i64>, p: &str, u: &str, v: &str| {
        (t, src, r, p.to_string(), u.to_string(), d(v))
    };
    assert_eq!(
        summary(&rows),
        [
            s(None, "unassigned", None, "orphan", "", "5.00"),
            s(None, "unassigned", None, "sandbox", "", "30.00"),
            s(Some(ML), "direct", None, "train", "", "100.00"),
            s(Some(ML), "shared", Some(7), "", "", "4.50"),
            s(Some(ML), "user", None, "sandbox", "alice", "30.00"),
            s(Some(PLATFORM), "shared", Some(7), "", "", "4.50"),
        ]
    );
    assert_eq!(total(&rows).unblended, d("174.00"));
}

#[test]
fn a_project_rule_takes_an_unowned_projects_leftover_and_an_owned_project_stays_direct() {
    let projects = [
        owned("k8s", PLATFORM, "50.00"),
        unowned("shared-cluster", "100.00", &[], &[]),
    ];
    let mut by_name = rule(3, SplitKind::Fixed);
    by_name.projects = vec!["shared-cluster".into(), "k8s".into()];
    by_name.teams = vec![(ML, d("60")), (PLATFORM, d("30")), (WEB, d("10"))];
    let rows = allocate_day(&projects, &[by_name], &[ML, PLATFORM, WEB]);
    let shared: Vec<(Option<i64>, Decimal)> = rows
        .iter()
        .filter(|r| r.source == Source::Shared)
        .map(|r| (r.team, r.amounts.unblended))
        .collect();
    assert_eq!(
        shared,
        [
            (Some(ML), d("60.00")),
            (Some(PLATFORM), d("30.00")),
            (Some(WEB), d("10.00"))
        ]
    );
    assert!(rows.iter().any(|r| r.project == "k8s" && r.source == Source::Direct));
}

#[test]
fn proportional_follows_each_teams_own_spend_that_day_and_falls_back_to_even() {
    let projects = [
        owned("a", ML, "300.00"),
        owned("b", PLATFORM, "100.00"),
        unowned("", "10.00", &[], &[]),
    ];
    let mut untagged = rule(1, SplitKind::Proportional);
    untagged.untagged = true;
    let rows = allocate_day(&projects, &[untagged.clone()], &[ML, PLATFORM, WEB]);
    let shared: Vec<(Option<i64>, Decimal)> = rows
        .iter()
        .filter(|r| r.source == Source::Shared)
        .map(|r| (r.team, r.amounts.unblended))
        .collect();
    // 3 : 1 : 0; web spent nothing, so it takes nothing.
    assert_eq!(shared, [(Some(ML), d("7.50")), (Some(PLATFORM), d("2.50"))]);

    let quiet_day = [unowned("", "10.00", &[], &[])];
    let rows = allocate_day(&quiet_day, &[untagged], &[ML, PLATFORM, WEB]);
    let shared: Vec<Decimal> = rows.iter().map(|r| r.amounts.unblended).collect();
    assert_eq!(shared, [d("3.34"), d("3.33"), d("3.33")]);
}

#[test]
fn a_service_rule_takes_its_services_share_of_what_is_left() {
    // 80 of the untagged 100 is NAT gateway (EC2 - Other) and CloudWatch by the service grain.
    let projects = [
        owned("a", ML, "10.00"),
        unowned(
            "",
            "100.00",
            &[],
            &[
                ("EC2 - Other", "60"),
                ("AmazonCloudWatch", "20"),
                ("Amazon Elastic Compute Cloud - Compute", "20"),
            ],
        ),
    ];
    let mut network = rule(4, SplitKind::Even);
    network.services = vec!["EC2 - Other".into(), "AmazonCloudWatch".into()];
    network.teams = vec![(ML, Decimal::ZERO), (WEB, Decimal::ZERO)];
    let rows = allocate_day(&projects, &[network], &[ML, PLATFORM, WEB]);
    assert_eq!(
        summary(&rows)
            .into_iter()
            .filter(|r| r.1 != "direct")
            .map(|r| (r.0, r.1, r.5))
            .collect::<Vec<_>>(),
        [
            (None, "unassigned", d("20.00")),
            (Some(ML), "shared", d("40.00")),
            (Some(WEB), "shared", d("40.00"))
        ]
    );
}

#[test]
fn every_metric_reconciles_to_the_last_digit_with_credits_and_odd_amounts() {
    let mut projects = vec![
        owned("a", ML, "1234.5678901"),
        unowned(
            "",
            "-33.33",
            &[("carol", Some(WEB), "1"), ("", None, "2")],
            &[("Tax", "1"), ("EC2 - Other", "2")],
        ),
        unowned(
            "lab",
            "0.07",
            &[("dave", Some(PLATFORM), "5"), ("erin", None, "5")],
            &[],
        ),
    ];
    projects[0].amounts.gpu_unblended = d("1000.0000001");
    projects[2].amounts.gpu_amortized = d("0.05");
    let mut fixed = rule(1, SplitKind::Fixed);
    fixed.services = vec!["EC2 - Other".into()];
    fixed.teams = vec![(ML, d("33.33")), (PLATFORM, d("33.33")), (WEB, d("33.34"))];
    let mut rest = rule(2, SplitKind::Proportional);
    rest.untagged = true;
    rest.projects = vec!["lab".into()];
    let rows = allocate_day(&projects, &[fixed, rest], &[ML, PLATFORM, WEB]);
    let mut expected = Amounts::default();
    for project in &projects {
        expected.add(&project.amounts);
    }
    assert_eq!(total(&rows), expected);
    assert!(rows.iter().all(|r| r.source != Source::Unassigned), "{rows:#?}");
}

#[test]
fn credits_refunds_and_tax_travel_with_the_spend_they_belong_to() {
    // Untagged 100.00 of which -20.00 is a credit and 8.00 tax; a quarter is alice's (ml).
    let mut untagged = unowned("", "100.00", &[("alice", Some(ML), "1"), ("", None, "3")], &[]);
    untagged.amounts.credit_unblended = d("-20.00");
    untagged.amounts.tax_unblended = d("8.00");
    let mut even = rule(1, SplitKind::Even);
    even.untagged = true;
    even.teams = vec![(PLATFORM, Decimal::ZERO), (WEB, Decimal::ZERO)];
    let rows = allocate_day(&[untagged], &[even], &[ML, PLATFORM, WEB]);
    let parts: Vec<(Option<i64>, Decimal, Decimal, Decimal)> = rows
        .iter()
        .map(|r| {
            (
                r.team,
                r.amounts.unblended,
                r.amounts.credit_unblended,
                r.amounts.tax_unblended,
            )
        })
        .collect();
    assert_eq!(
        parts,
        [
            (Some(ML), d("25.00"), d("-5.00"), d("2.00")),
            (Some(PLATFORM), d("37.50"), d("-7.50"), d("3.00")),
            (Some(WEB), d("37.50"), d("-7.50"), d("3.00")),
        ]
    );
    assert_eq!(total(&rows).credit_unblended, d("-20.00"));
}

#[test]
fn a_second_service_rule_takes_its_share_of_what_the_first_left() {
    // 100 untagged: NAT gateway 60, CloudWatch 20, compute 20. The first rule takes the 60;
    // the second takes CloudWatch's 20 of the 40 left, not 20 % of it.
    let projects = [unowned(
        "",
        "100.00",
        &[],
        &[
            ("EC2 - Other", "60"),
            ("AmazonCloudWatch", "20"),
            ("Amazon Elastic Compute Cloud - Compute", "20"),
        ],
    )];
    let mut network = rule(1, SplitKind::Even);
    network.services = vec!["EC2 - Other".into()];
    network.teams = vec![(ML, Decimal::ZERO)];
    let mut monitoring = rule(2, SplitKind::Even);
    monitoring.services = vec!["AmazonCloudWatch".into()];
    monitoring.teams = vec![(WEB, Decimal::ZERO)];
    let rows = allocate_day(&projects, &[network, monitoring], &[ML, WEB]);
    let got: Vec<(Option<i64>, Option<i64>, Decimal)> =
        rows.iter().map(|r| (r.team, r.rule, r.amounts.unblended)).collect();
    assert_eq!(
        got,
        [
            (Some(ML), Some(1), d("60.00")),
            (Some(WEB), Some(2), d("20.00")),
            (None, None, d("20.00"))
        ]
    );
}

#[test]
fn a_credit_on_one_users_tag_stays_with_that_users_team() {
    // An unowned project: alice (ml) used 100 and has a credit of -100 on her tag, so her net
    // is zero; bob (web) used 100. Split by net spend, bob's team would get alice's credit.
    let mut shared = unowned("sandbox", "100.00", &[], &[]);
    shared.amounts.credit_unblended = d("-100.00");
    shared.amounts.credit_amortized = d("-100.00");
    shared.users = vec![
        UserShare {
            user: "alice".into(),
            team: Some(ML),
            net: d("0.00"),
            credit: d("-100.00"),
            ..UserShare::default()
        },
        UserShare {
            user: "bob".into(),
            team: Some(WEB),
            net: d("100.00"),
            ..UserShare::default()
        },
    ];
    let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
    let parts: Vec<(Option<i64>, Decimal, Decimal)> = rows
        .iter()
        .map(|r| (r.team, r.amounts.unblended, r.amounts.credit_unblended))
        .collect();
    // Each used 100 (before credits); the credit is alice's alone.
    assert_eq!(
        parts,
        [(Some(ML), d("0.00"), d("-100.00")), (Some(WEB), d("100.00"), d("0.00"))]
    );
    assert_eq!(total(&rows).amortized, d("100.00"));
}

#[test]
fn a_record_type_no_user_carries_is_split_by_gross_usage() {
    // Tax with no user amounts: split by usage before credits (alice 100, bob 300), not by
    // net spend (alice's credit makes hers 50).
    let mut shared = unowned("sandbox", "358.00", &[], &[]);
    shared.amounts.credit_unblended = d("-50.00");
    shared.amounts.tax_unblended = d("8.00");
    shared.users = vec![
        UserShare {
            user: "alice".into(),
            team: Some(ML),
            net: d("50.00"),
            credit: d("-50.00"),
            ..UserShare::default()
        },
        UserShare {
            user: "bob".into(),
            team: Some(WEB),
            net: d("300.00"),
            ..UserShare::default()
        },
    ];
    let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
    let tax: Vec<(Option<i64>, Decimal)> = rows.iter().map(|r| (r.team, r.amounts.tax_unblended)).collect();
    assert_eq!(tax, [(Some(ML), d("2.00")), (Some(WEB), d("6.00"))]);
    assert_eq!(total(&rows).unblended, d("358.00"));
}

#[test]
fn an_accounts_team_takes_what_users_leave_of_unowned_spend_in_it_before_any_rule() {
    // The same untagged project in two accounts: in ML's account, bob (web) keeps his part
    // and the rest is ML's; in the unmapped account, the rule shares it.
    let in_account = |account: &str, team: Option<i64>, u: &str, users: &[(&str, Option<i64>, &str)]| ProjectDay {
        account: account.into(),
        account_team: team,
        ..unowned("", u, users, &[])
    };
    let projects = [
        in_account(
            "111122223333",
            Some(ML),
            "100",
            &[("bob", Some(WEB), "30"), ("", None, "70")],
        ),
        in_account("444455556666", None, "50", &[]),
        // An owned project in ML's account stays its owner's.
        ProjectDay {
            account: "111122223333".into(),
            account_team: Some(ML),
            ..owned("site", PLATFORM, "20")
        },
    ];
    let untagged = Rule {
        untagged: true,
        ..rule(9, SplitKind::Even)
    };
    let rows = allocate_day(&projects, &[untagged], &[PLATFORM, WEB]);
    assert_eq!(
        summary(&rows),
        [
            (Some(ML), "account", None, "".into(), "".into(), d("70")),
            (Some(PLATFORM), "direct", None, "site".into(), "".into(), d("20")),
            (Some(PLATFORM), "shared", Some(9), "".into(), "".into(), d("25")),
            (Some(WEB), "shared", Some(9), "".into(), "".into(), d("25")),
            (Some(WEB), "user", None, "".into(), "bob".into(), d("30")),
        ]
    );
    let accounts: Vec<(&str, &str)> = rows.iter().map(|r| (r.source.key(), r.account.as_str())).collect();
    assert!(accounts.contains(&("account", "111122223333")));
    assert!(accounts.contains(&("shared", "444455556666")));
    assert!(accounts.contains(&("direct", "111122223333")));
}
