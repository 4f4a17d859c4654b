//! The Teams page (`/teams`) and the Team and Project pages (`/teams/:team`,
//! `/projects/:project`): spend split by team, project, user, service and GPU instance family,
//! with a stacked daily chart (server-drawn SVG) whose numbers are also a table.

use chrono::NaiveDate;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::filters::FilterBar;
use super::period::{DateRange, Metric, Period};
use crate::app::TableHead;
use crate::codec::Svg;
use crate::error::AppError;
use crate::format::{percent, tag_label, usd};
use crate::table_rows::Rows;

/// A team's spend in the period and in the equal-length period before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamLine {
    pub team: String,
    pub spend: Decimal,
    pub previous: Decimal,
    pub gpu_spend: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamsView {
    pub period: Period,
    pub metric: Metric,
    pub range: DateRange,
    pub previous_range: DateRange,
    /// Days of `range` whose figures are still Estimated (provisional).
    pub estimated_days: Vec<NaiveDate>,
    pub total: Decimal,
    pub teams: Vec<TeamLine>,
    /// (day, team, spend): the chart's numbers.
    pub daily: Vec<(NaiveDate, String, Decimal)>,
    pub chart_svg: Svg,
    pub latest_day: Option<NaiveDate>,
    /// Team budgets in their current periods.
    pub budgets: Vec<crate::budgets::BudgetUse>,
}

/// Whose costs a page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    Team(String),
    Project(String),
}

impl Scope {
    pub fn name(&self) -> &str {
        match self {
            Scope::Team(name) | Scope::Project(name) => name,
        }
    }
}

/// One row of a breakdown table: a key (project, user, service, family) and its spend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub key: String,
    pub spend: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeView {
    pub scope: Scope,
    pub period: Period,
    pub metric: Metric,
    pub range: DateRange,
    /// What `previous_total` covers: as many days before `range` as it has days with data.
    pub previous_range: DateRange,
    /// Days of `range` whose figures are still Estimated (provisional).
    pub estimated_days: Vec<NaiveDate>,
    pub total: Decimal,
    pub previous_total: Decimal,
    /// Instance hours × GPUs per instance.
    pub gpu_hours: Decimal,
    pub spot_spend: Decimal,
    /// Spot plus on-demand instance spend, the base of the spot share.
    pub instance_spend: Decimal,
    pub by_project: Vec<Line>,
    pub by_user: Vec<Line>,
    pub by_service: Vec<Line>,
    pub by_family: Vec<Line>,
    pub chart_svg: Svg,
    /// Budgets on this team or project, in their current periods.
    pub budgets: Vec<crate::budgets::BudgetUse>,
    /// This project, or this team's projects, when enforcement flagged them.
    pub flagged: Vec<String>,
}

#[server(prefix = "/api", endpoint = "teams")]
pub async fn get_teams(period: Option<String>, metric: Option<String>) -> Result<TeamsView, AppError> {
    crate::error::with_status(
        async {
            let (state, period, metric, today) = super::cost_request(period, metric)?;
            let key = format!("teams|{}|{}|{today}", period.key(), metric.key());
            let compute = super::breakdown_queries::teams(&state.pool, period, metric, today);
            Ok(state.views.get_or_compute(&state.pool, key, compute).await?)
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "scope")]
pub async fn get_scope(
    kind: String,
    name: String,
    period: Option<String>,
    metric: Option<String>,
) -> Result<ScopeView, AppError> {
    crate::error::with_status(
        async {
            let (state, period, metric, today) = super::cost_request(period, metric)?;
            let scope = match kind.as_str() {
                "team" => Scope::Team(name),
                "project" => Scope::Project(name),
                _ => return Err(AppError::invalid("kind", "expected team or project")),
            };
            // Debug output quotes the name, so no name can forge another key.
            let key = format!("scope|{scope:?}|{}|{}|{today}", period.key(), metric.key());
            let compute = super::breakdown_queries::scope(&state.pool, scope, period, metric, today);
            Ok(state.views.get_or_compute(&state.pool, key, compute).await?)
        }
        .await,
    )
}

/// `/teams/<name>` and `/projects/<name>` with the name percent-encoded; untagged spend's
/// project is the empty name.
pub fn scope_href(kind: &str, name: &str) -> String {
    format!("/{kind}/{}", crate::format::url_encode(name))
}

fn change_text(now: Decimal, before: Decimal) -> String {
    if before.is_zero() {
        return if now.is_zero() { "0.0%".into() } else { "new".into() };
    }
    let change = (now - before) / before * Decimal::ONE_HUNDRED;
    format!("{}{:.1}%", if change > Decimal::ZERO { "+" } else { "" }, change)
}

pub fn crumbs(parent: Option<(&'static str, &'static str)>, title: String) -> impl IntoView {
    view! {
        <leptos_meta::Title text=format!("{title} · burnrate")/>
        <nav class="breadcrumbs" aria-label="Breadcrumb">
            <a href="/">"Overview"</a>
            {parent.map(|(href, label)| view! { " / " <a href=href>{label}</a> })}
            " / " <span>{title.clone()}</span>
        </nav>
        <h1>{title}</h1>
    }
}

fn no_data() -> AnyView {
    view! {
        <section class="empty" data-testid="empty-state">
            <h2>"No cost data yet"</h2>
            <p>"Run " <code>"burnrate ingest"</code> " with AWS credentials, or start with " <code>"burnrate serve --demo"</code> "."</p>
        </section>
    }
    .into_any()
}

/// The server-drawn SVG. plotters escapes every text and attribute it writes, and the
/// title/description are escaped when added, so the markup carries no tag value as code.
#[component]
pub fn Chart(svg: Svg, testid: &'static str) -> impl IntoView {
    view! { <figure class="chart" data-testid=testid inner_html=svg.0></figure> }
}

#[component]
pub fn TeamsPage() -> impl IntoView {
    let query = use_query_map();
    let filters = move || {
        let q = query.read();
        (super::filters::period_value(&q), q.get("metric"))
    };
    let data = crate::codec::resource(filters, |(period, metric)| get_teams(period, metric));
    view! {
        {crumbs(None, "Teams".into())}
        <FilterBar/>
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(view) if view.latest_day.is_none() => no_data(),
                    Ok(view) => view! { <TeamsBody view/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn TeamsBody(view: TeamsView) -> impl IntoView {
    let total = view.total;
    let csv = format!(
        "/api/export.csv?from={}&to={}&group_by=team&metric={}",
        view.range.from,
        view.range.to,
        view.metric.key()
    );
    let budgets = view.budgets;
    let rows = view
        .teams
        .into_iter()
        .map(|line| {
            let uses: Vec<_> = budgets.iter().filter(|b| b.scope.name() == line.team).cloned().collect();
            view! {
                <tr data-testid="team-row">
                    <th scope="row"><a href=scope_href("teams", &line.team) data-testid="team-name">{line.team.clone()}</a></th>
                    <td class="num" data-testid="team-spend" data-value=line.spend.to_string()>{usd(line.spend)}</td>
                    <td class="num">{percent(line.spend, total)}</td>
                    <td class="num">{usd(line.previous)}</td>
                    <td class="num">{change_text(line.spend, line.previous)}</td>
                    <td class="num">{usd(line.gpu_spend)}</td>
                    <td><crate::budgets::pages::BudgetUses uses/></td>
                </tr>
            }
        })
        .collect_view();
    let mut daily_rows = Rows::default();
    for (day, team, spend) in &view.daily {
        daily_rows.row("chart-row", |row| {
            row.text(&day.to_string());
            row.text(team);
            row.money(*spend);
            row.text(if view.estimated_days.contains(day) {
                "Estimated"
            } else {
                ""
            });
        });
    }
    view! {
        <Chart svg=view.chart_svg testid="teams-chart"/>
        <details class="chart-table">
            <summary>"Show the chart as a table"</summary>
            <table class="data" data-testid="teams-chart-table">
                <TableHead columns=&["Day", "Team", "Spend (USD)", "Figures"]/>
                <tbody inner_html=daily_rows.into_html()></tbody>
            </table>
            <EstimatedLegend days=view.estimated_days.clone()/>
        </details>
        <table class="data" data-testid="teams-table">
            <caption>{view.metric.label()} " cost, " {format!("{} – {}", view.range.from, view.range.last_day())}
                ", compared with " {format!("{} – {}", view.previous_range.from, view.previous_range.last_day())}</caption>
            <TableHead columns=&["Team", "Spend (USD)", "Share", "Previous period", "Change", "GPU (USD)", "Budget use"]/>
            <tbody>{rows}</tbody>
        </table>
        <p class="hint"><a download href=csv data-testid="teams-csv">"Download CSV (daily by team)"</a></p>
    }
}

/// Says which days are provisional, under a chart or table that marks them.
#[component]
pub fn EstimatedLegend(days: Vec<NaiveDate>) -> impl IntoView {
    (!days.is_empty()).then(|| {
        let span = match (days.first(), days.last()) {
            (Some(first), Some(last)) if first != last => format!("{first} to {last}"),
            (Some(first), _) => first.to_string(),
            _ => String::new(),
        };
        view! {
            <p class="hint" data-testid="estimated-legend">
                "Estimated: " {span} " are provisional. AWS publishes a day's figures over the following days and may "
                "restate them; they are drawn lighter in charts and marked in tables, and the run-rate leaves them out."
            </p>
        }
    })
}

#[component]
pub fn TeamPage() -> impl IntoView {
    view! { <ScopePage kind="team"/> }
}

#[component]
pub fn ProjectPage() -> impl IntoView {
    view! { <ScopePage kind="project"/> }
}

#[component]
fn ScopePage(kind: &'static str) -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let inputs = move || {
        let q = query.read();
        let name = params.read().get(kind).unwrap_or_default();
        (name, super::filters::period_value(&q), q.get("metric"))
    };
    let data = crate::codec::resource(inputs, move |(name, period, metric)| {
        get_scope(kind.to_string(), name, period, metric)
    });
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(view) => view! { <ScopeBody view/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ScopeBody(view: ScopeView) -> impl IntoView {
    let (title, parent, csv_filter) = match &view.scope {
        Scope::Team(name) => (format!("Team {name}"), Some(("/teams", "Teams")), "team"),
        Scope::Project(name) => (format!("Project {}", tag_label(name)), None, "project"),
    };
    let csv = |keys: &str| {
        format!(
            "/api/export.csv?from={}&to={}&group_by={csv_filter},{keys}&metric={}",
            view.range.from,
            view.range.to,
            view.metric.key()
        )
    };
    let total = view.total;
    let breakdown =
        |heading: &'static str, testid: &'static str, lines: Vec<Line>, link: Option<&'static str>, csv: String| {
            let row_testid = format!("{testid}-row");
            let mut rows = Rows::default();
            for line in &lines {
                rows.row(&row_testid, |row| {
                    match link {
                        Some(kind) => row.heading_link(&scope_href(kind, &line.key), tag_label(&line.key)),
                        None if testid == "by-user" => row.heading(tag_label(&line.key)),
                        None => row.heading(&line.key),
                    }
                    row.money(line.spend);
                    row.figure(&percent(line.spend, total));
                });
            }
            view! {
                <section class="breakdown">
                    <h2>{heading}</h2>
                    <table class="data" data-testid=testid>
                        <TableHead columns=&["Name", "Spend (USD)", "Share"]/>
                        <tbody inner_html=rows.into_html()></tbody>
                    </table>
                    <p class="hint"><a download href=csv>"Download CSV"</a></p>
                </section>
            }
        };
    let spot_share = percent(view.spot_spend, view.instance_spend);
    view! {
        {crumbs(parent, title)}
        <FilterBar/>
        <section class="cards" aria-label="Summary">
            <div class="card"><h2>{view.period.label()} " spend"</h2>
                <p class="figure" data-testid="scope-total" data-value=view.total.to_string()>{usd(view.total)}</p>
                <p class="hint">{format!("{}; ", view.range.label())} {change_text(view.total, view.previous_total)}
                    {format!(" against {}", view.previous_range.label())}</p></div>
            <div class="card"><h2>"GPU-hours"</h2>
                <p class="figure" data-testid="gpu-hours">{format!("{:.1}", view.gpu_hours)}</p>
                <p class="hint">"Instance hours × GPUs per instance"</p></div>
            <div class="card"><h2>"Spot share"</h2>
                <p class="figure" data-testid="spot-share">{spot_share}</p>
                <p class="hint">{usd(view.spot_spend)} " of " {usd(view.instance_spend)} " instance spend"</p></div>
        </section>
        <crate::enforcement::board::FlagBadge projects=view.flagged/>
        {(!view.budgets.is_empty()).then(|| view! {
            <section class="card" data-testid="scope-budgets"><h2>"Budgets"</h2><crate::budgets::pages::BudgetUses uses=view.budgets/></section>
        })}
        <Chart svg=view.chart_svg testid="scope-chart"/>
        <EstimatedLegend days=view.estimated_days.clone()/>
        <div class="breakdowns">
            {breakdown("By project", "by-project", view.by_project, Some("projects"), csv("project"))}
            {breakdown("Top users", "by-user", view.by_user, None, csv("user"))}
            {breakdown("By service", "by-service", view.by_service, None, csv("service"))}
            {breakdown("GPU instance families", "by-family", view.by_family, None, csv("instance_type"))}
        </div>
    }
}
