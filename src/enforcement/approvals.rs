//! Approvals: checking one, and keeping every version. An edit ends the current row and adds
//! a new one; a revocation ends it. Nothing is deleted, so a project's history is its rows.

use sqlx::PgConnection;

use super::Approval;
use crate::audit_log::{Actor, record};
use crate::error::FieldError;

/// An approval as typed or written in YAML, still text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalInput {
    pub project: String,
    pub approver: String,
    pub reason: String,
    pub cap: String,
    pub expires: String,
}

/// Every problem with its field. The project need not have spend yet: approving an upcoming
/// run in advance is normal.
pub fn validate(input: &ApprovalInput) -> Result<Approval, Vec<FieldError>> {
    let mut errors = Vec::new();
    if input.project.is_empty() || input.project.contains('\0') {
        errors.push(FieldError::new("project", "name the project (its tag value)"));
    }
    let approver = crate::mail::address::validate_email(&input.approver).map_err(|_| {
        FieldError::new(
            "approver",
            format!("{:?} is not an email address", input.approver.trim()),
        )
    });
    let reason = input.reason.trim();
    if reason.is_empty() || reason.chars().count() > 1000 {
        errors.push(FieldError::new("reason", "give a reason of 1 to 1000 characters"));
    }
    let cap = crate::format::amount::parse_amount(&input.cap).map_err(|m| FieldError::new("cap", m));
    let expires = chrono::NaiveDate::parse_from_str(input.expires.trim(), "%Y-%m-%d").map_err(|_| {
        FieldError::new(
            "expires",
            "expected a date YYYY-MM-DD (the last day the approval counts)",
        )
    });
    match (approver, cap, expires) {
        (Ok(approver), Ok(cap), Ok(expires)) if errors.is_empty() => Ok(Approval {
            key: None,
            project: input.project.clone(),
            approver,
            reason: reason.to_string(),
            cap,
            expires,
        }),
        (approver, cap, expires) => {
            errors.extend([approver.err(), cap.err(), expires.err()].into_iter().flatten());
            Err(errors)
        }
    }
}

/// The approvals in force or expired but not revoked, by project.
pub async fn current(conn: &mut PgConnection) -> Result<Vec<Approval>, sqlx::Error> {
    current_in(conn, None).await
}

/// The current approval of one project, if any (judging one action reads only its own).
pub async fn current_for(conn: &mut PgConnection, project: &str) -> Result<Option<Approval>, sqlx::Error> {
    Ok(current_in(conn, Some(project)).await?.into_iter().next())
}

async fn current_in(conn: &mut PgConnection, project: Option<&str>) -> Result<Vec<Approval>, sqlx::Error> {
    sqlx::query_as(
        "select key, project, approver, reason, cap, expires from approvals
         where ended_at is null and ($1::text is null or project = $1) order by project",
    )
    .bind(project)
    .fetch_all(conn)
    .await
}

/// Every version of every approval, newest first.
pub async fn history(conn: &mut PgConnection) -> Result<Vec<super::model::ApprovalVersion>, sqlx::Error> {
    // The history shows versions, not keys: `key` is left out (null).
    sqlx::query_as(
        "select null::text as key, project, approver, reason, cap, expires, created_by,
                to_char(created_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') as created_at,
                ended_how, ended_by,
                to_char(ended_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') as ended_at
         from approvals order by created_at desc, id desc limit 500",
    )
    .fetch_all(conn)
    .await
}

/// Makes `approval` current: a new version of the approval with its key (or, without one,
/// of its project's approval), which ends the version it replaces. False when nothing changed.
pub async fn set(conn: &mut PgConnection, actor: &Actor, approval: &Approval) -> Result<bool, sqlx::Error> {
    let existing = find(&current(conn).await?, approval).cloned();
    let unchanged = existing.as_ref().is_some_and(|e| {
        *e == Approval {
            key: e.key.clone(),
            ..approval.clone()
        }
    });
    if unchanged {
        return Ok(false);
    }
    // A key moved to another project (its tag value was renamed) ends the old project's
    // version; the project's own earlier approval, if any, ends too.
    if let Some(old) = existing.as_ref().filter(|e| e.project != approval.project) {
        end(conn, actor, &old.project, "edited").await?;
    }
    end(conn, actor, &approval.project, "edited").await?;
    let key = approval
        .key
        .clone()
        .or_else(|| existing.as_ref().and_then(|e| e.key.clone()))
        .unwrap_or_else(|| approval.project.clone());
    sqlx::query(
        "insert into approvals (key, project, approver, reason, cap, expires, created_by)
         values ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&key)
    .bind(&approval.project)
    .bind(&approval.approver)
    .bind(&approval.reason)
    .bind(approval.cap)
    .bind(approval.expires)
    .bind(&actor.label)
    .execute(&mut *conn)
    .await?;
    let action = if existing.is_some() {
        "approval.edit"
    } else {
        "approval.add"
    };
    let details = serde_json::json!({
        "key": key, "approver": approval.approver, "reason": approval.reason,
        "cap": approval.cap.to_string(), "expires": approval.expires.to_string(),
        "previous_project": existing.as_ref().filter(|e| e.project != approval.project).map(|e| e.project.clone()),
    });
    record(conn, actor, action, &approval.project, details).await?;
    Ok(true)
}

/// The current approval `wanted` replaces: the one with its key, or (without a key) its
/// project's.
pub fn find<'a>(current: &'a [Approval], wanted: &Approval) -> Option<&'a Approval> {
    match &wanted.key {
        // Exact, as project tag values are: `LLM` and `llm` are two projects.
        Some(key) => current.iter().find(|a| a.key.as_deref() == Some(key.as_str())),
        None => current.iter().find(|a| a.project == wanted.project),
    }
}

/// Ends the project's current approval; false when it had none.
pub async fn revoke(conn: &mut PgConnection, actor: &Actor, project: &str) -> Result<bool, sqlx::Error> {
    let ended = end(conn, actor, project, "revoked").await?;
    if ended {
        record(conn, actor, "approval.revoke", project, serde_json::json!({})).await?;
    }
    Ok(ended)
}

async fn end(conn: &mut PgConnection, actor: &Actor, project: &str, how: &str) -> Result<bool, sqlx::Error> {
    let ended = sqlx::query(
        "update approvals set ended_at = now(), ended_by = $2, ended_how = $3 where project = $1 and ended_at is null",
    )
    .bind(project)
    .bind(&actor.label)
    .bind(how)
    .execute(conn)
    .await?;
    Ok(ended.rows_affected() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    #[test]
    fn every_field_is_checked() {
        let good = ApprovalInput {
            project: "llm-finetune".into(),
            approver: "CFO@example.com".into(),
            reason: "Q4 foundation model run".into(),
            cap: "50000.00".into(),
            expires: "2027-01-31".into(),
        };
        let approval = validate(&good).expect("valid");
        assert_eq!(approval.approver, "cfo@example.com");
        assert_eq!(approval.cap, Decimal::new(5000000, 2));
        let bad = ApprovalInput {
            project: String::new(),
            approver: "nobody".into(),
            reason: " ".into(),
            cap: "0".into(),
            expires: "31/01/2027".into(),
        };
        let fields: Vec<String> = validate(&bad)
            .expect_err("invalid")
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["project", "reason", "approver", "cap", "expires"]);
    }
}
