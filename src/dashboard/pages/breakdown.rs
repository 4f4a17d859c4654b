//! The Teams page (`/teams`) and the Team and Project pages (`/teams/:team`,
//! `/projects/:project`): spend split by team, project, user, service and GPU instance family,
//! with a stacked daily chart (server-drawn SVG) whose numbers are also a table.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
use rust_decimal::Decimal;

use crate::dashboard::model::{Line, Scope, ScopeData, TeamsData};
use crate::dashboard::server_fns::{get_scope, get_teams};
use crate::format::{number, percent, percent_value, tag_label, usd};
use crate::savings::pages::{ProjectFactsForm, SavingsAvailableNote};
use crate::ui::aws_account_picker::{AccountNote, AccountPicker};
use crate::ui::chart::{Chart, OpenDaysLegend};
use crate::ui::filters::{CostFilters, FilterBar};
use crate::ui::links::{export_href, scope_href_in};
use crate::ui::page::{NoCostData, PageHeader, loaded};
use crate::ui::table::TableHead;
use crate::ui::table_rows::Rows;

fn change_text(now: Decimal, before: Decimal) -> String {
    if before.is_zero() {
        return if now.is_zero() { "0.0%".into() } else { "new".into() };
    }
    let change = ((now - before) / before * Decimal::ONE_HUNDRED)
        .round_dp_with_strategy(1, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    format!(
        "{}{}",
        if change > Decimal::ZERO { "+" } else { "" },
        percent_value(change)
    )
}

#[component]
pub fn TeamsPage() -> impl IntoView {
    let query = use_query_map();
    let filters = move || CostFilters::read(&query.read());
    let data = crate::codec::resource(filters, |f| get_teams(f.period, f.metric, f.credits, f.account));
    view! {
        <PageHeader title="Teams"/>
        <FilterBar/>
        {loaded(data, |view: TeamsData| match view.latest_day {
            None => view! { <NoCostData/> }.into_any(),
            Some(_) => view! { <TeamsBody view/> }.into_any(),
        })}
    }
}

#[component]
fn TeamsBody(view: TeamsData) -> impl IntoView {
    let total = view.total;
    let account = view.account.clone();
    let csv = export_href(view.range, "team", view.metric, account.as_deref());
    let budgets = view.budgets;
    let rows = view
        .teams
        .into_iter()
        .map(|line| {
            let uses: Vec<_> = budgets.iter().filter(|b| b.scope.name() == line.team).cloned().collect();
            view! {
                <tr data-testid="team-row">
                    <th scope="row"><a href=scope_href_in("teams", &line.team, account.as_deref()) data-testid="team-name">{line.team.clone()}</a></th>
                    <td class="num" data-testid="team-spend" data-value=line.spend.to_string()>{usd(line.spend)}</td>
                    <td class="num">{percent(line.spend, total)}</td>
                    <td class="num">{usd(line.previous)}</td>
                    <td class="num">{change_text(line.spend, line.previous)}</td>
                    <td class="num" data-testid="team-direct" data-value=line.direct.to_string()>{usd(line.direct)}</td>
                    <td class="num" data-testid="team-user-tag" data-value=line.user_tag.to_string()>{usd(line.user_tag)}</td>
                    <td class="num" data-testid="team-account" data-value=line.account.to_string()>{usd(line.account)}</td>
                    <td class="num" data-testid="team-shared" data-value=line.shared.to_string()>{usd(line.shared)}</td>
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
            row.text(view.open_days.label(*day));
        });
    }
    view! {
        <div class="filters"><AccountPicker accounts=view.all_accounts current=view.account.clone()/></div>
        <AccountNote account=view.account/>
        <Chart svg=view.chart_svg testid="teams-chart"/>
        <details class="chart-table">
            <summary>"Show the chart as a table"</summary>
            <table class="data" data-testid="teams-chart-table">
                <TableHead columns=&["Day", "Team", "Spend (USD)", "Figures"]/>
                <tbody inner_html=daily_rows.into_html()></tbody>
            </table>
            <OpenDaysLegend days=view.open_days.clone()/>
        </details>
        <table class="data" data-testid="teams-table">
            <caption>{view.metric.label()} " cost " {view.credits.describe()} ", " {format!("{} – {}", view.range.from, view.range.last_day())}
                ", compared with " {format!("{} – {}", view.previous_range.from, view.previous_range.last_day())}</caption>
            <TableHead columns=&["Team", "Spend (USD)", "Share", "Previous period", "Change", "Own projects", "Via user tag", "Via account", "Shared", "GPU (USD)", "Budget use"]/>
            <tbody>{rows}</tbody>
            <tfoot><tr>
                <th scope="row">"Organisation"</th>
                <td class="num" data-testid="teams-total" data-value=total.to_string()>{usd(total)}</td>
                <td class="num">"100.0%"</td>
                <td colspan="8"></td>
            </tr></tfoot>
        </table>
        <p class="hint">"Each dollar is counted once: a project's team, else its user tag's team, else its AWS account's team, else the "
            <a href="/admin/allocation">"shared-cost rules"</a> ", else Unassigned. The teams and Unassigned add up to the organisation's total."</p>
        <p class="hint"><a download href=csv data-testid="teams-csv">"Download CSV (daily by team)"</a></p>
    }
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
        (
            params.read().get(kind).unwrap_or_default(),
            CostFilters::read(&query.read()),
        )
    };
    let data = crate::codec::resource(inputs, move |(name, f)| {
        get_scope(kind.to_string(), name, f.period, f.metric, f.credits, f.account)
    });
    loaded(data, |view| view! { <ScopeBody view/> })
}

#[component]
fn ScopeBody(view: ScopeData) -> impl IntoView {
    let (title, parent, csv_filter) = match &view.scope {
        Scope::Team(name) => (format!("Team {name}"), Some(("/teams", "Teams")), "team"),
        Scope::Project(name) => (format!("Project {}", tag_label(name)), None, "project"),
    };
    let account = view.account.clone();
    let csv = |keys: &str| {
        export_href(
            view.range,
            &format!("{csv_filter},{keys}"),
            view.metric,
            account.as_deref(),
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
                        Some(kind) => row.heading_link(
                            &scope_href_in(kind, &line.key, account.as_deref()),
                            tag_label(&line.key),
                        ),
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
        {match parent {
            Some(parent) => view! { <PageHeader title=title.clone() parent/> }.into_any(),
            None => view! { <PageHeader title=title.clone()/> }.into_any(),
        }}
        <FilterBar/>
        <div class="filters"><AccountPicker accounts=view.all_accounts.clone() current=view.account.clone()/></div>
        <AccountNote account=view.account.clone()/>
        <section class="cards" aria-label="Summary">
            <div class="card"><h2>{view.period.label()} " spend"</h2>
                <p class="figure" data-testid="scope-total" data-value=view.total.to_string()>{usd(view.total)}</p>
                <p class="hint">{format!("{}; ", view.range.label())} {change_text(view.total, view.previous_total)}
                    {format!(" against {}", view.previous_range.label())}</p></div>
            <div class="card"><h2>"GPU-hours"</h2>
                <p class="figure" data-testid="gpu-hours">{number(view.gpu_hours, 1)}</p>
                <p class="hint">"Instance hours × GPUs per instance"</p></div>
            <div class="card"><h2>"Spot share"</h2>
                <p class="figure" data-testid="spot-share">{spot_share}</p>
                <p class="hint">{usd(view.spot_spend)} " of " {usd(view.instance_spend)} " instance spend"</p></div>
        </section>
        <crate::enforcement::pages::enforcement::FlagBadge projects=view.flagged/>
        {view.account.is_some().then(|| view! {
            <p class="hint" data-testid="account-wide-note">"The budgets and the savings below count every account: a budget limits the whole team or project."</p>
        })}
        {match view.scope.clone() {
            Scope::Team(name) => view! { <SavingsAvailableNote team=name/> }.into_any(),
            Scope::Project(name) => view! { <SavingsAvailableNote project=name/> }.into_any(),
        }}
        {(!view.budgets.is_empty()).then(|| view! {
            <section class="card" data-testid="scope-budgets"><h2>"Budgets"</h2><crate::budgets::pages::BudgetUses uses=view.budgets/></section>
        })}
        <Chart svg=view.chart_svg testid="scope-chart"/>
        <OpenDaysLegend days=view.open_days.clone()/>
        {(!view.parts.is_empty()).then(|| view! { <AllocationParts parts=view.parts.clone() total/> })}
        <Accounts lines=view.by_account.clone() scope=view.scope.clone() current=view.account.clone()
            csv=export_href(view.range, &format!("{csv_filter},account,account_name"), view.metric, None)/>
        {(view.credits == crate::period::Credits::Gross).then(|| view! {
            <p class="hint" data-testid="credits-note">
                "Before credits: the total, the chart and the projects leave credits and refunds out. "
                "Users, services, GPU families and workloads still include them: Cost Explorer reports "
                "credits inside those groups, so they cannot be taken apart there."
            </p>
        })}
        <div class="breakdowns">
            {breakdown("By project", "by-project", view.by_project, Some("projects"), csv("project"))}
            {breakdown("Top users", "by-user", view.by_user, None, csv("user"))}
            {breakdown("By service", "by-service", view.by_service, None, csv("service"))}
            {breakdown("GPU instance families", "by-family", view.by_family, None, csv("instance_type"))}
            {breakdown("By workload", "by-workload", view.by_workload, None, csv("workload"))}
        </div>
        {match view.scope {
            Scope::Project(name) => Some(view! { <ProjectFactsForm project=name/> }),
            Scope::Team(_) => None,
        }}
    }
}

/// Where a team's or project's spend is, by AWS account, with the accounts mapped to a team:
/// every account even on a page narrowed to one (that row marked), each a link to the page
/// narrowed to it, and shares of the table's own total.
#[component]
fn Accounts(
    lines: Vec<crate::dashboard::model::AwsAccountLine>,
    scope: Scope,
    current: Option<String>,
    csv: String,
) -> impl IntoView {
    if lines.is_empty() {
        return ().into_any();
    }
    let total: Decimal = lines.iter().map(|l| l.spend).sum();
    let (kind, name) = match &scope {
        Scope::Team(name) => ("teams", name.as_str()),
        Scope::Project(name) => ("projects", name.as_str()),
    };
    let mut rows = Rows::default();
    for line in &lines {
        rows.row("account-row", |row| {
            if line.id.is_empty() {
                row.heading("Not recorded (stored before accounts)");
            } else if current.as_deref() == Some(line.id.as_str()) {
                row.heading(&format!("{} (shown)", line.id));
            } else {
                row.heading_link(&scope_href_in(kind, name, Some(&line.id)), &line.id);
            }
            row.text(&line.name);
            row.text(if line.mapped { "Mapped to this team" } else { "" });
            row.money(line.spend);
            row.figure(&percent(line.spend, total));
        });
    }
    view! {
        <section class="breakdown">
            <h2>"AWS accounts"</h2>
            <table class="data" data-testid="by-account">
                <TableHead columns=&["Account", "Name", "Mapping", "Spend (USD)", "Share"]/>
                <tbody inner_html=rows.into_html()></tbody>
            </table>
            <p class="hint">"Every account, whichever one the page shows. " <a download href=csv>"Download CSV"</a></p>
        </section>
    }
    .into_any()
}

/// A team's spend by allocation step: what it owns, what its user tags and AWS accounts
/// carry from unowned projects, and its shares of shared-cost rules.
#[component]
fn AllocationParts(parts: Vec<crate::allocation::PartLine>, total: Decimal) -> impl IntoView {
    let mut rows = Rows::default();
    for part in &parts {
        rows.row("allocation-row", |row| {
            row.text(match part.source.as_str() {
                "direct" => "Own project",
                "user" => "Via user tag",
                "account" => "Via account",
                "shared" => "Shared",
                _ => "Unassigned",
            });
            row.text(tag_label(&part.project));
            row.text(part.rule.as_deref().unwrap_or(""));
            row.money(part.spend);
            row.figure(&percent(part.spend, total));
        });
    }
    view! {
        <section class="breakdown" data-testid="allocation">
            <h2>"Where this spend comes from"</h2>
            <table class="data" data-testid="allocation-table">
                <TableHead columns=&["Step", "Charged to project", "Rule", "Spend (USD)", "Share"]/>
                <tbody inner_html=rows.into_html()></tbody>
            </table>
        </section>
    }
}
