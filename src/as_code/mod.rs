//! Teams and budgets as code: `burnrate config import FILE` and `burnrate config export`.
//!
//! ```yaml
//! teams:
//!   - name: ml-research
//!     owners: [alice@example.com]
//!     projects: [llm-finetune, rlhf-eval]
//!     users: [alice, bob]
//! budgets:            # see budgets.rs
//!   - name: ml-research monthly
//!     scope: {team: ml-research}
//! ```
//!
//! Each section present is the whole truth for what it describes: import checks the entire
//! file first (every problem is reported with its line), then makes the database match in
//! one transaction. A section left out leaves its part of the database alone.

pub mod approvals;
pub mod budgets;
mod budgets_sync;
pub mod policies;
mod pricing;
pub mod shared_costs;
mod teams;

use std::fmt;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use sqlx::{Acquire, PgPool};

use crate::audit_log::Actor;
use crate::teams::{mapping, store};
use shared_costs::FileRule;

/// The sections this version reads.
const SECTIONS: [&str; 6] = ["teams", "budgets", "approvals", "policies", "pricing", "shared_costs"];

/// One problem in the file, at a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A checked file. A section is `None` when the file leaves it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub teams: Option<mapping::Mappings>,
    pub budgets: Option<Vec<budgets::FileBudget>>,
    pub approvals: Option<Vec<crate::enforcement::Approval>>,
    pub policies: Option<Vec<policies::FilePolicy>>,
    /// What each project listed under `teams:` declares (present with `teams:`).
    pub project_facts: Option<teams::ProjectFactsMap>,
    pub pricing: Option<crate::savings::pricing::Pricing>,
    pub shared_costs: Option<Vec<shared_costs::FileRule>>,
}

/// Parses and checks the whole file, returning every problem found, in line order.
pub fn parse(text: &str) -> Result<ConfigFile, Vec<FileError>> {
    let documents = MarkedYaml::load_from_str(text).map_err(|e| {
        vec![FileError {
            line: e.marker().line(),
            message: format!("not valid YAML: {}", e.info()),
        }]
    })?;
    let mut errors = Errors::default();
    let mut file = ConfigFile {
        teams: None,
        budgets: None,
        approvals: None,
        policies: None,
        project_facts: None,
        pricing: None,
        shared_costs: None,
    };
    match documents.as_slice() {
        [] => {}
        [root] => read_root(root, &mut file, &mut errors),
        [_, second, ..] => errors.add(second, "the file must hold one YAML document"),
    }
    if errors.0.is_empty() {
        Ok(file)
    } else {
        errors.0.sort_by_key(|e| e.line);
        Err(errors.0)
    }
}

#[derive(Default)]
pub(crate) struct Errors(Vec<FileError>);

impl Errors {
    pub(crate) fn add(&mut self, node: &MarkedYaml, message: impl Into<String>) {
        self.0.push(FileError {
            line: node.span.start.line(),
            message: message.into(),
        });
    }
}

fn read_root(root: &MarkedYaml, file: &mut ConfigFile, errors: &mut Errors) {
    let YamlData::Mapping(sections) = &root.data else {
        if !matches!(root.data, YamlData::Value(Scalar::Null)) {
            errors.add(root, "expected sections such as `teams:` at the top level");
        }
        return;
    };
    for (key, value) in sections {
        match text(key).as_deref() {
            Some("teams") => {
                let (mappings, facts) = teams::read_teams(value, errors);
                file.teams = Some(mappings);
                file.project_facts = Some(facts);
            }
            Some("pricing") => file.pricing = Some(pricing::read(value, errors)),
            Some("shared_costs") => file.shared_costs = Some(shared_costs::read(value, errors)),
            Some("budgets") => file.budgets = Some(budgets::read(value, errors)),
            Some("approvals") => file.approvals = Some(approvals::read(value, errors)),
            Some("policies") => file.policies = Some(policies::read(value, errors)),
            Some(other) => errors.add(
                key,
                format!("unknown section {other:?}; expected one of: {}", SECTIONS.join(", ")),
            ),
            None => errors.add(key, "section names must be text"),
        }
    }
}

/// The text items of a list field, each with its node for error lines.
pub(crate) fn list<'a, 'input>(
    node: &'a MarkedYaml<'input>,
    field: &str,
    errors: &mut Errors,
) -> Vec<(&'a MarkedYaml<'input>, String)> {
    let items = match &node.data {
        YamlData::Sequence(items) => items.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, format!("`{field}` must be a list, e.g. [a, b]"));
            return Vec::new();
        }
    };
    let mut values = Vec::new();
    for item in items {
        match text(item) {
            Some(value) => values.push((item, value)),
            None => errors.add(
                item,
                format!("`{field}` entries must be text (quote values that look like numbers)"),
            ),
        }
    }
    values
}

/// A scalar's text. Numbers, booleans and nulls are refused rather than converted, since a
/// tag value `007` or `true` would not survive the round trip.
pub(crate) fn text(node: &MarkedYaml) -> Option<String> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// An AWS account ID in the file, quoted or not. An unquoted ID is a YAML number, which
/// drops a leading zero: such an ID is refused with the hint to quote it.
pub(crate) fn account_id(node: &MarkedYaml) -> Result<String, String> {
    let id = match &node.data {
        YamlData::Value(Scalar::String(s)) => crate::period::AwsAccountId::parse(s),
        YamlData::Value(Scalar::Integer(n)) => crate::period::AwsAccountId::parse(&n.to_string())
            .map_err(|m| format!("{m}; quote an ID that starts with 0 (\"012345678901\"), or YAML drops the zero")),
        _ => Err("an AWS account ID must be its 12 digits, e.g. \"111122223333\"".to_string()),
    };
    id.map(String::from)
}

/// A number's text and whether it was a YAML float (which may have lost digits).
pub(crate) fn number_text(node: &MarkedYaml) -> Option<(String, bool)> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some((s.to_string(), false)),
        YamlData::Value(Scalar::Integer(n)) => Some((n.to_string(), false)),
        YamlData::Value(Scalar::FloatingPoint(f)) => Some((f.to_string(), true)),
        _ => None,
    }
}

/// Why an import changed nothing.
#[derive(Debug)]
pub enum ApplyError {
    /// The file is valid on its own but names something the database lacks.
    Invalid(Vec<FileError>),
    Database(sqlx::Error),
}

impl From<sqlx::Error> for ApplyError {
    fn from(err: sqlx::Error) -> Self {
        ApplyError::Database(err)
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Invalid(errors) => {
                let lines: Vec<String> = errors.iter().map(FileError::to_string).collect();
                write!(f, "{}", lines.join("\n"))
            }
            ApplyError::Database(err) => write!(f, "database error: {err}"),
        }
    }
}

/// No `source`: the message already carries the database error, and the CLI prints the
/// whole chain.
impl std::error::Error for ApplyError {}

/// Makes the database match `file` in one transaction (or, with `dry_run`, only reports what
/// would change). Returns the changes in the order applied. Teams go first, so budgets may
/// name teams the same file creates.
pub async fn apply(pool: &PgPool, actor: &Actor, file: &ConfigFile, dry_run: bool) -> Result<Vec<String>, ApplyError> {
    Ok(apply_reporting(pool, actor, file, dry_run).await?.changes)
}

/// What an import changed, and the allocation rewrite it needed.
#[derive(Debug)]
pub struct Applied {
    pub changes: Vec<String>,
    /// Days of allocation rewritten and how long that took; `None` when nothing moved spend.
    pub rewrite: Option<(u64, std::time::Duration)>,
}

/// [`apply`], saying how much of the allocation it rewrote and how long that took.
pub async fn apply_reporting(
    pool: &PgPool,
    actor: &Actor,
    file: &ConfigFile,
    dry_run: bool,
) -> Result<Applied, ApplyError> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let mut changes = Vec::new();
    // Mappings move spend on the days their projects and user tags have it; a rule change
    // on every day.
    let mut moved = crate::allocation::moves::Moved::default();
    let mut reallocate_all = false;
    if let Some(desired) = &file.teams {
        let current = store::load(&mut tx).await?;
        let team_changes = mapping::diff(&current, desired);
        moved = store::apply_moving(&mut tx, actor, &team_changes).await?;
        changes.extend(team_changes.iter().map(ToString::to_string));
    }
    if let Some(file_rules) = &file.shared_costs {
        let mut problems = Vec::new();
        for FileRule { line, rule } in file_rules {
            for error in crate::allocation::rule_store::check(&mut tx, rule).await? {
                problems.push(FileError {
                    line: *line,
                    message: format!("{}: {}", error.field, error.message),
                });
            }
        }
        if !problems.is_empty() {
            return Err(ApplyError::Invalid(problems));
        }
        let rules: Vec<_> = file_rules.iter().map(|r| r.rule.clone()).collect();
        let rule_changes = crate::allocation::rule_store::replace_all(&mut tx, actor, &rules).await?;
        reallocate_all = !rule_changes.is_empty();
        changes.extend(rule_changes);
    }
    // The allocation is rewritten once, for what changed (a dry run is rolled back, so it
    // skips the work).
    let mut rewrite = None;
    if !dry_run && (reallocate_all || moved != crate::allocation::moves::Moved::default()) {
        // A rewrite of many days is bulk work, as an ingestion's is: no statement bound.
        crate::db::lift_statement_timeout_in_transaction(&mut tx).await?;
        let started = std::time::Instant::now();
        let days = if reallocate_all {
            // Rules move shared spend on every day; owners change only with moved projects.
            let owners = crate::allocation::moves::owners_of(&mut tx, &moved).await?;
            crate::allocation::store::refresh_every_day(&mut tx, &owners).await?
        } else {
            crate::allocation::moves::refresh_moved(&mut tx, &moved).await?
        };
        rewrite = Some((days, started.elapsed()));
    }
    if let Some(facts) = &file.project_facts {
        // One read of what every project declares, then a write (with its audit) for those
        // the file changes: a statement per project was most of an unchanged import's time.
        let stored = crate::savings::store::all_project_facts(&mut tx).await?;
        for (project, declared) in facts {
            if stored.get(project).copied().unwrap_or_default() == *declared {
                continue;
            }
            if crate::savings::store::set_project_facts(&mut tx, actor, project, *declared).await? {
                changes.push(format!("project {}: {}", quote(project), pricing::describe(declared)));
            }
        }
    }
    if let Some(desired) = &file.pricing
        && crate::savings::pricing::save(&mut tx, Some(desired)).await?
    {
        crate::audit_log::record(&mut tx, actor, "pricing.import", "pricing", serde_json::json!(desired)).await?;
        changes.push("pricing: replaced".to_string());
    }
    if let Some(desired) = &file.budgets {
        changes.extend(budgets_sync::apply(&mut tx, actor, desired).await?);
    }
    let before_enforcement = changes.len();
    if let Some(desired) = &file.approvals {
        changes.extend(approvals::apply(&mut tx, actor, desired).await?);
    }
    if let Some(desired) = &file.policies {
        changes.extend(policies::apply(&mut tx, actor, desired).await?);
    }
    // Which of enforcement's actions must be judged again once this commits: judging every
    // waiting action (thousands of dry-run proposals at scale) is the slowest part of an
    // import, so it judges them all only when approvals or policies changed. A verdict rests
    // on the project's team (its policy) and approval: a team change judges the projects
    // it moved (a deleted team's included) and no other.
    let touched = if changes.len() > before_enforcement {
        crate::enforcement::judge::Touched::All
    } else {
        crate::enforcement::judge::Touched::Projects(moved.projects.clone())
    };
    // Deferred checks run now, in a dry run too: a deleted team still named by a budget is refused.
    sqlx::query("set constraints all immediate")
        .execute(&mut *tx)
        .await
        .map_err(|err| match budgets_sync::team_still_budgeted(&err) {
            Some(message) => ApplyError::Invalid(vec![FileError { line: 1, message }]),
            None => ApplyError::Database(err),
        })?;
    if dry_run {
        tx.rollback().await?;
    } else {
        tx.commit().await?;
        // Approvals, policies and teams change what enforcement may do: actions that no
        // longer hold are disarmed once the import has committed, not across its allocation
        // rewrite (their AWS side goes on the next pass).
        crate::enforcement::judge::disarm_after_change(pool, &actor.label, &touched).await;
    }
    Ok(Applied { changes, rewrite })
}

/// The current teams, budgets, approvals and policies as a file `import` accepts unchanged. Every value is a
/// double-quoted YAML string (JSON's escapes), so any tag value survives.
pub async fn export(pool: &PgPool) -> Result<String, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let teams = store::load(&mut conn).await?;
    let budgets = crate::budgets::store::list(&mut conn).await?;
    let approvals = crate::enforcement::approvals::current(&mut conn).await?;
    let policies = crate::enforcement::policy::all(&mut conn).await?;
    let facts = crate::savings::store::all_project_facts(&mut conn).await?;
    let stored_pricing: bool = sqlx::query_scalar("select exists (select 1 from pricing_settings)")
        .fetch_one(&mut *conn)
        .await?;
    let rules = crate::allocation::rule_store::list(&mut conn).await?;
    let pricing = if stored_pricing {
        pricing::render(&crate::savings::pricing::load(&mut conn).await?)
    } else {
        String::new()
    };
    Ok(format!(
        "{}{}{}{}{}{pricing}",
        teams::render(&teams, &facts),
        shared_costs::render(&rules),
        budgets_sync::render(&budgets),
        approvals::render(&approvals),
        policies::render(&policies)
    ))
}

/// Every problem `parse` finds in `text`, as the CLI prints them (for the section tests).
#[cfg(test)]
pub(crate) fn error_lines(text: &str) -> Vec<String> {
    parse(text)
        .err()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A YAML double-quoted string.
pub(crate) fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}
