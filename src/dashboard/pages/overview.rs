//! The Overview page (`/`): spend, run-rate and spend by team for the chosen period.
//! Filters live in the query string; changing one navigates client-side and refetches.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::dashboard::model::{OverviewData, ProjectChange};
use crate::dashboard::server_fns::get_overview;
use crate::format::{UNASSIGNED_TEAM, count, percent, tag_label, usd};
use crate::ui::aws_account_picker::AccountPicker;
use crate::ui::chart::{Chart, OpenDaysLegend};
use crate::ui::filters::{CostFilters, FilterBar};
use crate::ui::links::{export_href, scope_href_in};
use crate::ui::page::{PageHeader, loaded};
use crate::ui::table::TableHead;
use crate::ui::table_rows::Rows;

#[component]
pub fn OverviewPage() -> impl IntoView {
    let query = use_query_map();
    let filters = move || {
        let q = query.read();
        (CostFilters::read(&q), q.get("team"))
    };
    let overview = crate::codec::resource(filters, |(f, team)| {
        get_overview(f.period, f.metric, f.credits, team, f.account)
    });

    view! {
        <PageHeader title="Overview" top=true/>
        <crate::dashboard::pages::first_steps::FirstStepsNote/>
        <FilterBar/>
        <crate::savings::pages::SavingsAvailableNote/>
        {loaded(overview, |data| view! { <OverviewBody data/> })}
    }
}

/// Narrows the Overview to one team; kept in `?team=` beside the period and metric.
#[component]
fn TeamFilter(data: OverviewData) -> impl IntoView {
    let options = std::iter::once(UNASSIGNED_TEAM.to_string())
        .chain(data.all_teams.iter().cloned())
        .map(|team| (team.clone(), team))
        .collect();
    let kept = data.account.clone().map(|a| ("account", a));
    narrowing_form(&data, ("team", "Team ", "All teams"), options, data.team.clone(), kept)
}

/// A GET form that sets one narrowing (`field`) of the Overview to one of `options`
/// (value, label), keeping the period, metric, credits and the other narrowing (`kept`).
fn narrowing_form(
    data: &OverviewData,
    (field, label, every): (&'static str, &'static str, &'static str),
    options: Vec<(String, String)>,
    current: Option<String>,
    kept: Option<(&'static str, String)>,
) -> impl IntoView + use<> {
    let current = current.unwrap_or_default();
    let (period, metric, credits) = (data.period.key(), data.metric.key(), data.credits.key());
    let options = options
        .into_iter()
        .map(|(value, text)| {
            let selected = value == current;
            view! { <option value=value selected=selected>{text}</option> }
        })
        .collect_view();
    view! {
        <leptos_router::components::Form method="GET" action="/" attr:class="inline" attr:data-testid=format!("{field}-form")>
            <input type="hidden" name="period" value=period/>
            <input type="hidden" name="metric" value=metric/>
            <input type="hidden" name="credits" value=credits/>
            {kept.map(|(name, value)| view! { <input type="hidden" name=name value=value/> })}
            <label>{label} <select name=field data-testid=format!("{field}-select")>
                <option value="" selected=current.is_empty()>{every}</option>
                {options}
            </select></label>
            <button type="submit">{format!("Show {field}")}</button>
        </leptos_router::components::Form>
    }
}

#[component]
fn OverviewBody(data: OverviewData) -> impl IntoView {
    if data.latest_day.is_none() {
        return view! { <crate::ui::page::NoCostData/> }.into_any();
    }
    let range_text = data.range.label();
    let run_rate_text = match data.run_rate_range {
        Some(window) => format!("Mean of {}, the last settled days", window.label()),
        None => "No day is settled yet: every stored day is provisional".to_string(),
    };
    let total = data.total;
    let mut rows = Rows::default();
    for team in &data.teams {
        rows.row("team-row", |row| {
            row.marked("team-name")
                .heading_link(&scope_href_in("teams", &team.team, data.account.as_deref()), &team.team);
            row.marked("team-spend").money(team.spend);
            row.figure(&percent(team.spend, total));
            row.money(team.gpu_spend);
        });
    }

    view! {
        <div class="filters">
            <TeamFilter data=data.clone()/>
            <AccountPicker accounts=data.all_accounts.clone() current=data.account.clone()/>
        </div>
        <crate::enforcement::pages::enforcement::FlagBadge projects=data.flagged.clone()/>
        <section class="cards" aria-label="Summary">
            <div class="card">
                <h2>{data.period.label()} " spend"</h2>
                <p class="figure" data-testid="period-total" data-value=total.to_string()>{usd(total)}</p>
                <p class="hint" data-testid="period-range">{range_text}</p>
            </div>
            <div class="card">
                <h2>"Daily run-rate"</h2>
                <p class="figure" data-testid="run-rate" data-value=data.run_rate.to_string()>
                    {usd(data.run_rate)}
                </p>
                <p class="hint">{run_rate_text}</p>
            </div>
            {data.forecast.clone().map(|f| view! {
                <div class="card">
                    <h2>"Forecast to " {f.last_day.to_string()}</h2>
                    <p class="figure" data-testid="forecast" data-value=f.expected.to_string()>{usd(f.expected)}</p>
                    <p class="hint" data-testid="forecast-range">{format!("Range {} – {}; {} days from {} at the run-rate", usd(f.low), usd(f.high), count(f.projected_days), f.projected_from)}</p>
                </div>
            })}
            {(!data.budgets.is_empty()).then(|| view! {
                <div class="card" data-testid="org-budgets">
                    <h2>"Budgets"</h2>
                    <crate::budgets::pages::BudgetUses uses=data.budgets.clone()/>
                </div>
            })}
            <div class="card">
                <h2>"GPU share"</h2>
                <p class="figure" data-testid="gpu-share">{percent(data.gpu_total, total)}</p>
                <p class="hint">{usd(data.gpu_total)} " on GPU instances"</p>
            </div>
        </section>
        <Chart svg=data.burn_svg.clone() testid="burn-chart"/>
        <OpenDaysLegend days=data.open_days.clone()/>
        <section aria-labelledby="by-team">
            <h2 id="by-team">"Spend by team"</h2>
            <table class="data" data-testid="team-table">
                <caption>{data.metric.label()} " cost " {data.credits.describe()} ", " {format!("{} – {}", data.range.from, data.range.last_day())}</caption>
                <thead>
                    <tr>
                        <th scope="col">"Team"</th>
                        <th scope="col" class="num">"Spend (USD)"</th>
                        <th scope="col" class="num">"Share"</th>
                        <th scope="col" class="num">"GPU (USD)"</th>
                    </tr>
                </thead>
                <tbody inner_html=rows.into_html()></tbody>
            </table>
            <p class="hint">"Data through " {data.latest_day.map(|d| d.to_string()).unwrap_or_default()} " (UTC). "
                <a data-testid="team-csv" download
                    href=export_href(data.range, "team", data.metric, data.account.as_deref())>
                    "Download CSV (daily by team)"
                </a>
            </p>
        </section>
        <RecordTypes lines=data.record_types.clone() total/>
        <div class="breakdowns">
            <ProjectTable heading="Top projects" testid="top-projects" rows=data.top_projects.clone() account=data.account.clone()/>
            <ProjectTable heading=format!("Biggest changes against {}", data.compared_with.label()) testid="movers" rows=data.movers.clone() account=data.account.clone()/>
        </div>
    }
    .into_any()
}

#[component]
fn ProjectTable(
    #[prop(into)] heading: String,
    testid: &'static str,
    rows: Vec<ProjectChange>,
    account: Option<String>,
) -> impl IntoView {
    let row_testid = format!("{testid}-row");
    let mut html = Rows::default();
    for line in &rows {
        html.row(&row_testid, |row| {
            row.heading_link(
                &scope_href_in("projects", &line.project, account.as_deref()),
                tag_label(&line.project),
            );
            row.text(&line.team);
            row.money(line.spend);
            row.money(line.spend - line.previous);
        });
    }
    view! {
        <section>
            <h2>{heading}</h2>
            <table class="data" data-testid=testid>
                <TableHead columns=&["Project", "Team", "Spend (USD)", "Change (USD)"]/>
                <tbody inner_html=html.into_html()></tbody>
            </table>
        </section>
    }
}

/// Usage apart from credits, refunds, tax and fees, as Cost Explorer's record types say.
#[component]
fn RecordTypes(lines: Vec<crate::dashboard::model::Line>, total: rust_decimal::Decimal) -> impl IntoView {
    (!lines.is_empty()).then(|| {
        let mut rows = Rows::default();
        for line in &lines {
            rows.row("record-type-row", |row| {
                row.heading(&line.key);
                row.marked("record-type-spend").money(line.spend);
            });
        }
        view! {
            <section aria-labelledby="by-record-type">
                <h2 id="by-record-type">"Usage, credits, refunds, tax and fees"</h2>
                <table class="data" data-testid="record-types">
                    <thead><tr><th scope="col">"Record type"</th><th scope="col" class="num">"Amount (USD)"</th></tr></thead>
                    <tbody inner_html=rows.into_html()></tbody>
                    <tfoot><tr><th scope="row">"Total, as above"</th><td class="num">{usd(total)}</td></tr></tfoot>
                </table>
                <p class="hint">"Cost Explorer's record types, each as it rounds them (so they may differ from the total in the last digits); days stored before burnrate read record types show as not broken down. Every total on this page includes them, as the bill does; "
                    <code>"burnrate export --group-by project,record_type"</code> " has them per project and day."</p>
            </section>
        }
    })
}
