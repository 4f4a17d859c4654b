//! What the recommendations read: the window (the last N settled days with data) and, for
//! every accelerator usage type in it, each project's daily spend and instance-hours.

use std::collections::{BTreeMap, HashSet};

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{Inferred, ProjectFacts, Workload};
use crate::costs::settlement::SETTLED;
use crate::period::DateRange;
use crate::usage_type::{self, PurchaseOption, SageMakerUse};

/// The days recommendations rest on: the last `days` days that have settled data
/// (provisional days are partial, and a partial day would read as a GPU switched off). `to` is exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

impl Window {
    pub fn range(self) -> DateRange {
        DateRange {
            from: self.from,
            to: self.to,
        }
    }

    /// Calendar days in the window; days without spend inside it count as zero use.
    pub fn days(self) -> i64 {
        (self.to - self.from).num_days()
    }

    pub fn each_day(self) -> impl Iterator<Item = NaiveDate> {
        self.from.iter_days().take_while(move |d| *d < self.to)
    }

    /// Scales an amount spent over the window to 30 days.
    pub fn per_30_days(self, amount: Decimal) -> Decimal {
        amount * Decimal::from(30) / Decimal::from(self.days().max(1))
    }
}

/// The window, or `None` when no settled day has data.
pub async fn window(conn: &mut PgConnection, days: u32) -> Result<Option<Window>, sqlx::Error> {
    let bounds: (Option<NaiveDate>, Option<NaiveDate>) = sqlx::query_as(&format!(
        "select min(day), max(day) from (
             select distinct day from daily_project_costs where {SETTLED} order by day desc limit $1
         ) recent"
    ))
    .bind(i64::from(days.max(1)))
    .fetch_one(conn)
    .await?;
    Ok(match bounds {
        (Some(from), Some(last)) => Some(Window {
            from,
            to: last + chrono::Days::new(1),
        }),
        _ => None,
    })
}

/// One accelerator usage type of one project over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub project: String,
    /// `None` when no team owns the project.
    pub team: Option<String>,
    pub usage_type: String,
    pub purchase: PurchaseOption,
    pub instance_type: String,
    pub family: String,
    pub gpus_per_instance: Decimal,
    pub sagemaker: Option<SageMakerUse>,
    pub region: String,
    pub facts: ProjectFacts,
    /// Exact unblended spend in the window.
    pub spend: Decimal,
    pub hours: Decimal,
    /// Instance-hours per day with spend; days missing here had none.
    pub daily_hours: BTreeMap<NaiveDate, Decimal>,
    /// What the project's bill suggests it runs, when it declares nothing (`inference`).
    pub inferred: Option<Inferred>,
    /// The spend by linked account: a rule that reads one account's resources judges only
    /// that account's part.
    pub accounts: BTreeMap<String, Decimal>,
}

impl Usage {
    /// What the usage runs: SageMaker's own operation decides it (`Train:` is training,
    /// `Host:` serving, `Notebk:` dev), whatever the project declares; then what the project
    /// declares; then what its bill suggests.
    pub fn workload(&self) -> Workload {
        match self.sagemaker {
            Some(SageMakerUse::Training) => Workload::Training,
            Some(SageMakerUse::Hosting) => Workload::Serving,
            Some(SageMakerUse::Notebook) => Workload::Dev,
            _ => self.inference().map_or(self.facts.workload, |i| i.workload),
        }
    }

    /// The inference this usage's workload comes from, if it comes from one.
    pub fn inference(&self) -> Option<&Inferred> {
        match self.sagemaker {
            Some(SageMakerUse::Training | SageMakerUse::Hosting | SageMakerUse::Notebook) => None,
            _ if self.facts.workload != Workload::Unknown => None,
            _ => self.inferred.as_ref(),
        }
    }

    pub fn is_ec2(&self) -> bool {
        self.sagemaker.is_none()
    }

    pub fn hourly_rate(&self) -> Option<Decimal> {
        (self.hours > Decimal::ZERO).then(|| self.spend / self.hours)
    }
}

#[derive(sqlx::FromRow)]
struct Row {
    project: String,
    team: Option<String>,
    usage_type: String,
    purchase_option: String,
    instance_type: String,
    instance_family: String,
    gpu_count: Decimal,
    workload: String,
    model_params_b: Option<Decimal>,
    model_precision: Option<String>,
    day: NaiveDate,
    account_id: String,
    unblended: Decimal,
    usage_quantity: Decimal,
}

/// Every accelerator usage type's daily rows in the window, grouped by project and usage type.
pub async fn usage(conn: &mut PgConnection, window: Window) -> Result<Vec<Usage>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(
        "select c.project, t.name as team, c.usage_type, u.purchase_option, u.instance_type, u.instance_family,
                u.gpu_count, coalesce(p.workload, 'unknown') as workload, p.model_params_b, p.model_precision,
                c.day, c.account_id, c.unblended, c.usage_quantity
         from costs_by_usage_type c
         join usage_types u on u.usage_type = c.usage_type and u.gpu_count > 0
         left join projects p on p.name = c.project
         left join teams t on t.id = p.team_id
         where c.day >= $1 and c.day < $2
         order by c.project, c.usage_type, c.day",
    )
    .bind(window.from)
    .bind(window.to)
    .fetch_all(conn)
    .await?;
    let mut out: Vec<Usage> = Vec::new();
    for row in rows {
        let same = out
            .last()
            .is_some_and(|u| u.project == row.project && u.usage_type == row.usage_type);
        if !same {
            out.push(Usage {
                sagemaker: usage_type::sagemaker_use(&row.usage_type),
                region: usage_type::region(&row.usage_type),
                purchase: PurchaseOption::parse(&row.purchase_option),
                facts: super::store::facts_from_row((
                    row.workload.clone(),
                    row.model_params_b,
                    row.model_precision.clone(),
                )),
                project: row.project,
                team: row.team,
                usage_type: row.usage_type,
                instance_type: row.instance_type,
                family: row.instance_family,
                gpus_per_instance: row.gpu_count,
                spend: Decimal::ZERO,
                hours: Decimal::ZERO,
                daily_hours: BTreeMap::new(),
                inferred: None,
                accounts: BTreeMap::new(),
            });
        }
        if let Some(usage) = out.last_mut() {
            *usage.accounts.entry(row.account_id).or_default() += row.unblended;
            usage.spend += row.unblended;
            usage.hours += row.usage_quantity;
            *usage.daily_hours.entry(row.day).or_default() += row.usage_quantity;
        }
    }
    Ok(out)
}

/// What one linked account holds, for `?account=`: which project ran which accelerator usage
/// type there and which projects had any spend there, in the window (for recommendations)
/// and on any day (for ledger rows, which outlive the usage they ended).
#[derive(Debug, Default)]
pub struct AwsAccountUsage {
    usage: HashSet<(String, String)>,
    projects: HashSet<String>,
    ever: HashSet<String>,
}

impl AwsAccountUsage {
    pub async fn read(
        conn: &mut PgConnection,
        account: &crate::period::AwsAccountId,
        window: Option<Window>,
    ) -> Result<AwsAccountUsage, sqlx::Error> {
        let ever: Vec<String> =
            sqlx::query_scalar("select distinct project from daily_project_costs where account_id = $1")
                .bind(account.as_str())
                .fetch_all(&mut *conn)
                .await?;
        let Some(window) = window else {
            return Ok(AwsAccountUsage {
                ever: ever.into_iter().collect(),
                ..AwsAccountUsage::default()
            });
        };
        let usage: Vec<(String, String)> = sqlx::query_as(
            "select distinct c.project, c.usage_type from costs_by_usage_type c
             join usage_types u on u.usage_type = c.usage_type and u.gpu_count > 0
             where c.day >= $1 and c.day < $2 and c.account_id = $3",
        )
        .bind(window.from)
        .bind(window.to)
        .bind(account.as_str())
        .fetch_all(&mut *conn)
        .await?;
        let projects: Vec<String> = sqlx::query_scalar(
            "select distinct project from daily_project_costs where account_id = $3 and day >= $1 and day < $2",
        )
        .bind(window.from)
        .bind(window.to)
        .bind(account.as_str())
        .fetch_all(&mut *conn)
        .await?;
        Ok(AwsAccountUsage {
            usage: usage.into_iter().collect(),
            projects: projects.into_iter().collect(),
            ever: ever.into_iter().collect(),
        })
    }

    /// Whether a recommendation about `project` (and `usage_type`, when it names one) is
    /// this account's: one on a usage type when the project ran it here in the window, one on
    /// a whole project (utilisation, idle endpoints) when the project had spend here in the
    /// window. Rows of no project (commitments, unmapped hosts) are the organisation's, in no
    /// one account.
    pub fn covers(&self, project: &str, usage_type: &str) -> bool {
        if !usage_type.is_empty() {
            self.usage.contains(&(project.to_string(), usage_type.to_string()))
        } else {
            !project.is_empty() && self.projects.contains(project)
        }
    }

    /// Whether a ledger row about `project` is this account's: the project has had spend here.
    pub fn ever_held(&self, project: &str) -> bool {
        self.ever.contains(project)
    }
}
