//! Approval requests: a lead asks for a project of one of the lead's teams to be approved
//! (cap, last day, reason); an admin approves it, perhaps with another cap or day, or denies
//! it with a reason. Approving makes the approval current with the deciding admin as its
//! approver (never typed in) and wakes enforcement, as an admin's own approval does. The
//! request, its decision and the approval are one transaction; no email or AWS call is in it.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::executor::Executor;
use super::model::{Approval, ApprovalRequest};
use crate::audit_log::record;
use crate::auth::Caller;
use crate::error::{AppError, FieldError};
use crate::format::usd;

/// How far ahead a request may reach: a year and a day, so "until the same day next year"
/// fits.
const MAX_DAYS_AHEAD: i64 = 366;

/// A request as typed or posted, still text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInput {
    pub project: String,
    pub cap: String,
    pub until: String,
    pub reason: String,
}

struct Checked {
    project: String,
    cap: Decimal,
    until: NaiveDate,
    reason: String,
}

fn check_until(until: NaiveDate, today: NaiveDate, field: &str) -> Result<NaiveDate, FieldError> {
    if until < today || (until - today).num_days() > MAX_DAYS_AHEAD {
        return Err(FieldError::new(
            field,
            format!("a day from today ({today}) to a year ahead (UTC)"),
        ));
    }
    Ok(until)
}

fn validate(input: &RequestInput, today: NaiveDate) -> Result<Checked, Vec<FieldError>> {
    let mut errors = Vec::new();
    // Tag values are kept verbatim, as approvals keep them.
    if input.project.trim().is_empty() || input.project.contains('\0') || input.project.chars().count() > 256 {
        errors.push(FieldError::new("project", "name the project (its tag value)"));
    }
    let cap = crate::format::amount::parse_amount(&input.cap).map_err(|m| FieldError::new("cap", m));
    let until = chrono::NaiveDate::parse_from_str(input.until.trim(), "%Y-%m-%d")
        .map_err(|_| FieldError::new("until", "expected a date YYYY-MM-DD (the last day it would count)"))
        .and_then(|day| check_until(day, today, "until"));
    let reason = input.reason.trim();
    if reason.is_empty() || reason.chars().count() > 1000 {
        errors.push(FieldError::new("reason", "give a reason of 1 to 1000 characters"));
    }
    match (cap, until) {
        (Ok(cap), Ok(until)) if errors.is_empty() => Ok(Checked {
            project: input.project.clone(),
            cap,
            until,
            reason: reason.to_string(),
        }),
        (cap, until) => {
            errors.extend([cap.err(), until.err()].into_iter().flatten());
            Err(errors)
        }
    }
}

const SELECT: &str = "select r.id, r.project, t.name as team, r.cap, r.until, r.reason, r.requested_by,
        to_char(r.requested_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') as requested_at,
        r.status, r.decided_by,
        to_char(r.decided_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') as decided_at,
        r.decision_note, r.approved_cap, r.approved_until
    from approval_requests r left join projects p on p.name = r.project left join teams t on t.id = p.team_id";

/// Waiting requests first, then decided ones, newest first; the last 500. Only the projects
/// of `only_team` when given.
pub async fn list(conn: &mut PgConnection, only_team: Option<i64>) -> Result<Vec<ApprovalRequest>, sqlx::Error> {
    sqlx::query_as(&format!(
        "{SELECT} where $1::bigint is null or t.id = $1
         order by (r.status = 'pending') desc, r.requested_at desc, r.id desc limit 500"
    ))
    .bind(only_team)
    .fetch_all(conn)
    .await
}

async fn one(conn: &mut PgConnection, id: i64) -> Result<Option<ApprovalRequest>, sqlx::Error> {
    sqlx::query_as(&format!("{SELECT} where r.id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Records `caller`'s request: admins for any project, leads for their teams' projects.
pub async fn create(
    pool: &PgPool,
    caller: &Caller,
    input: &RequestInput,
    today: NaiveDate,
) -> Result<ApprovalRequest, AppError> {
    let checked = validate(input, today).map_err(AppError::InvalidFields)?;
    let mut tx = pool.begin().await?;
    let team: Option<i64> = sqlx::query_scalar::<_, Option<i64>>("select team_id from projects where name = $1")
        .bind(&checked.project)
        .fetch_optional(&mut *tx)
        .await?
        .flatten();
    let allowed = caller.is_admin() || team.is_some_and(|id| caller.can_edit_team(id));
    if !allowed {
        return Err(AppError::Forbidden(
            "leads request approvals for their own teams' projects; admins for any".into(),
        ));
    }
    let id: Option<i64> = sqlx::query_scalar(
        "insert into approval_requests (project, cap, until, reason, requested_by)
         values ($1, $2, $3, $4, $5)
         on conflict (project) where status = 'pending' do nothing returning id",
    )
    .bind(&checked.project)
    .bind(checked.cap)
    .bind(checked.until)
    .bind(&checked.reason)
    .bind(&caller.email)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(id) = id else {
        return Err(AppError::Conflict(format!(
            "a request for {:?} already waits for an admin",
            checked.project
        )));
    };
    let details = serde_json::json!({
        "request": id, "cap": checked.cap.to_string(), "until": checked.until.to_string(), "reason": checked.reason,
    });
    record(&mut tx, &caller.into(), "approval.request", &checked.project, details).await?;
    let made = one(&mut tx, id).await?.ok_or(AppError::Internal)?;
    tx.commit().await?;
    Ok(made)
}

/// An admin's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve, with the request's cap and day unless given.
    Approve {
        cap: Option<Decimal>,
        until: Option<NaiveDate>,
        note: Option<String>,
        /// The admin chose to replace an approval granted after the request, though this
        /// one lowers its cap or ends it sooner.
        replace_newer: bool,
    },
    Deny {
        note: String,
    },
}

impl Decision {
    /// `approve` or `deny`; a denial says why.
    pub fn parse(
        decision: &str,
        cap: Option<Decimal>,
        until: Option<NaiveDate>,
        note: Option<&str>,
    ) -> Result<Decision, AppError> {
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        if note.is_some_and(|n| n.chars().count() > 1000) {
            return Err(AppError::invalid("note", "at most 1000 characters"));
        }
        match decision.trim() {
            "approve" => {
                if let Some(cap) = cap
                    && (cap <= Decimal::ZERO || cap > Decimal::from(1_000_000_000_000i64) || cap.scale() > 2)
                {
                    return Err(AppError::invalid("cap", "an amount above 0, in cents at most"));
                }
                Ok(Decision::Approve {
                    cap,
                    until,
                    note: note.map(str::to_string),
                    replace_newer: false,
                })
            }
            "deny" => Ok(Decision::Deny {
                note: note
                    .ok_or_else(|| AppError::invalid("note", "say why the request is denied"))?
                    .to_string(),
            }),
            _ => Err(AppError::invalid("decision", "expected approve or deny")),
        }
    }

    /// An approval that may replace a newer, larger or longer one (the admin's explicit
    /// choice); no effect on a denial.
    pub fn replacing_newer(self, yes: bool) -> Decision {
        match self {
            Decision::Approve { cap, until, note, .. } => Decision::Approve {
                cap,
                until,
                note,
                replace_newer: yes,
            },
            deny => deny,
        }
    }
}

/// Refuses (409) to replace an approval granted after request `id` was made with one that
/// lowers its cap or ends it sooner: approving an old request would quietly take back what
/// was granted since, and could re-arm a stop. Both approvals are named.
async fn newer_approval_kept(
    conn: &mut PgConnection,
    id: i64,
    project: &str,
    (cap, until): (Decimal, NaiveDate),
) -> Result<(), AppError> {
    let newer: Option<(Decimal, NaiveDate, String)> = sqlx::query_as(
        "select a.cap, a.expires, a.approver from approvals a, approval_requests r
         where r.id = $1 and a.project = $2 and a.ended_at is null and a.created_at > r.requested_at
           and a.expires >= (now() at time zone 'utc')::date",
    )
    .bind(id)
    .bind(project)
    .fetch_optional(&mut *conn)
    .await?;
    match newer {
        Some((current_cap, current_until, approver)) if cap < current_cap || until < current_until => {
            Err(AppError::Conflict(format!(
                "{approver} approved {project:?} after this request was made, with a cap of {} through \
                 {current_until}; approving the request (a cap of {} through {until}) would lower or shorten it. \
                 Deny the request, approve it with another cap or last day, or replace the newer approval \
                 explicitly (replace_newer)",
                usd(current_cap),
                usd(cap)
            )))
        }
        _ => Ok(()),
    }
}

/// Decides waiting request `id` (admins). Approving makes the project's approval current with
/// `caller` as approver, which may lift actions its absence armed.
pub async fn decide(
    pool: &PgPool,
    executor: &Executor,
    caller: &Caller,
    id: i64,
    decision: &Decision,
    today: NaiveDate,
) -> Result<ApprovalRequest, AppError> {
    if !caller.is_admin() {
        return Err(AppError::Forbidden("only admins approve or deny requests".into()));
    }
    let mut tx = pool.begin().await?;
    let row: Option<(String, Decimal, NaiveDate, String, String)> =
        sqlx::query_as("select project, cap, until, reason, status from approval_requests where id = $1 for update")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some((project, cap, until, reason, status)) = row else {
        return Err(AppError::NotFound("no such request".into()));
    };
    if status != "pending" {
        return Err(AppError::Conflict(format!("this request was {status} already")));
    }
    let actor: crate::audit_log::Actor = caller.into();
    match decision {
        Decision::Approve {
            cap: new_cap,
            until: new_until,
            note,
            replace_newer,
        } => {
            let cap = new_cap.unwrap_or(cap);
            let until = match new_until {
                Some(day) => check_until(*day, today, "until").map_err(|e| AppError::InvalidFields(vec![e]))?,
                // Approving as asked after the asked-for last day would replace the project's
                // current approval with one already expired.
                None if until < today => {
                    return Err(AppError::Conflict(format!(
                        "the request's last day, {until}, has passed; approve it with a new last day, or deny it"
                    )));
                }
                None => until,
            };
            if !replace_newer {
                newer_approval_kept(&mut tx, id, &project, (cap, until)).await?;
            }
            let approval = Approval {
                key: None,
                project: project.clone(),
                approver: caller.email.clone(),
                reason,
                cap,
                expires: until,
            };
            super::approvals::set(&mut tx, &actor, &approval).await?;
            sqlx::query(
                "update approval_requests set status = 'approved', decided_by = $2, decided_at = now(),
                     decision_note = $3, approved_cap = $4, approved_until = $5 where id = $1",
            )
            .bind(id)
            .bind(&caller.email)
            .bind(note.as_deref())
            .bind(cap)
            .bind(until)
            .execute(&mut *tx)
            .await?;
            let details =
                serde_json::json!({"request": id, "cap": cap.to_string(), "until": until.to_string(), "note": note});
            record(&mut tx, &actor, "approval.request.approve", &project, details).await?;
        }
        Decision::Deny { note } => {
            sqlx::query(
                "update approval_requests set status = 'denied', decided_by = $2, decided_at = now(), decision_note = $3
                 where id = $1",
            )
            .bind(id)
            .bind(&caller.email)
            .bind(note)
            .execute(&mut *tx)
            .await?;
            record(
                &mut tx,
                &actor,
                "approval.request.deny",
                &project,
                serde_json::json!({"request": id, "note": note}),
            )
            .await?;
        }
    }
    let decided = one(&mut tx, id).await?.ok_or(AppError::Internal)?;
    let touched = super::judge::Touched::Project(project);
    super::judge::commit_and_disarm(tx, &caller.email, &executor.wake, &touched).await?;
    Ok(decided)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        text.parse().expect("day")
    }

    #[test]
    fn a_request_names_each_bad_field_and_reaches_at_most_a_year_ahead() {
        let today = day("2026-11-27");
        let good = RequestInput {
            project: "llm-finetune".into(),
            cap: "50000".into(),
            until: "2027-01-31".into(),
            reason: "Q4 foundation model run".into(),
        };
        let checked = validate(&good, today).expect("valid");
        assert_eq!(checked.cap, Decimal::from(50_000));
        let far = RequestInput {
            until: "2027-11-29".into(),
            ..good.clone()
        };
        let fields = |input: &RequestInput| -> Vec<String> {
            validate(input, today)
                .err()
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.field)
                .collect()
        };
        assert_eq!(fields(&far), ["until"], "367 days ahead");
        let edge = RequestInput {
            until: "2027-11-28".into(),
            ..good.clone()
        };
        assert!(validate(&edge, today).is_ok(), "366 days ahead");
        let past = RequestInput {
            until: "2026-11-26".into(),
            ..good.clone()
        };
        assert_eq!(fields(&past), ["until"]);
        let bad = RequestInput {
            project: " ".into(),
            cap: "0".into(),
            until: "soon".into(),
            reason: String::new(),
        };
        assert_eq!(fields(&bad), ["project", "reason", "cap", "until"]);
    }

    #[test]
    fn a_denial_says_why_and_an_approval_checks_its_cap() {
        assert!(matches!(
            Decision::parse("deny", None, None, Some("  ")),
            Err(AppError::InvalidInput { field, .. }) if field == "note"
        ));
        assert_eq!(
            Decision::parse("deny", None, None, Some("no budget left")),
            Ok(Decision::Deny {
                note: "no budget left".into()
            })
        );
        assert!(Decision::parse("approve", Some(Decimal::ZERO), None, None).is_err());
        assert!(Decision::parse("approve", Some(Decimal::new(1, 3)), None, None).is_err());
        assert!(Decision::parse("maybe", None, None, None).is_err());
        assert_eq!(
            Decision::parse("approve", Some(Decimal::from(900)), None, None),
            Ok(Decision::Approve {
                cap: Some(Decimal::from(900)),
                until: None,
                note: None,
                replace_newer: false,
            })
        );
        // Replacing a newer approval is asked for explicitly, and means nothing to a denial.
        let approve = Decision::parse("approve", None, None, None).expect("approve");
        assert!(matches!(
            approve.replacing_newer(true),
            Decision::Approve {
                replace_newer: true,
                ..
            }
        ));
        let deny = Decision::parse("deny", None, None, Some("no")).expect("deny");
        assert_eq!(deny.clone().replacing_newer(true), deny);
    }
}
