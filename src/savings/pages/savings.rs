//! `/savings`: every recommendation ranked by monthly saving, filtered by team and kind in
//! the URL, each with its evidence and a decision; the ledger; utilisation per project.

use leptos::prelude::*;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::format::{count, number, percent_value, tag_label, usd};
use crate::savings::model::{Decision, Kind, Opportunity, SavingsData};
use crate::savings::server_fns::{ConfirmWorkload, DecideSavings, SnoozeIdle, get_savings};
use crate::ui::links::{SAVINGS_CSV, account_query, scope_href_in};
use crate::ui::page::PageHeader;
use crate::ui::table::{DataTable, TableHead};

#[component]
pub fn SavingsPage() -> impl IntoView {
    let query = use_query_map();
    let decide = ServerAction::<DecideSavings>::new();
    let snooze = ServerAction::<SnoozeIdle>::new();
    let confirm = ServerAction::<ConfirmWorkload>::new();
    let filters = move || {
        let q = query.read();
        (q.get("team"), q.get("kind"), q.get("account"))
    };
    let data = crate::codec::resource(
        move || {
            (
                filters(),
                decide.version().get(),
                snooze.version().get(),
                confirm.version().get(),
            )
        },
        |((team, kind, account), _, _, _)| get_savings(team, kind, account),
    );
    view! {
        <PageHeader title="GPU savings"/>
        <p class="hint">"Each recommendation says what to change, what it saves per 30 days, and the figures it rests on: "
            "this organisation's own spend and instance-hours over the last 30 settled days, and DCGM utilisation where Prometheus is configured. "
            <a href="/what-if">"What-if calculator"</a> "."</p>
        {crate::ui::page::loaded(data, move |page| view! { <SavingsBody page decide snooze confirm/> })}
    }
}

#[component]
fn SavingsBody(
    page: SavingsData,
    decide: ServerAction<DecideSavings>,
    snooze: ServerAction<SnoozeIdle>,
    confirm: ServerAction<ConfirmWorkload>,
) -> impl IntoView {
    let query = use_query_map();
    let team = move || query.read().get("team").unwrap_or_default();
    let kind = move || query.read().get("kind").unwrap_or_default();
    let account = move || query.read().get("account").filter(|a| !a.is_empty());
    let csv_href = move || {
        format!(
            "{SAVINGS_CSV}?team={}&kind={}{}",
            crate::format::url_encode(&team()),
            crate::format::url_encode(&kind()),
            account_query('&', account().as_deref())
        )
    };
    let window = match (page.from, page.to) {
        (Some(from), Some(to)) => format!("{from} to {} (UTC)", to.pred_opt().unwrap_or(to)),
        _ => "no settled days with data yet".to_string(),
    };
    let result: Signal<_> = decide.value().into();
    let team_options = page
        .teams
        .iter()
        .map(|t| {
            let (value, label) = (t.clone(), t.clone());
            view! { <option value=value.clone() selected=move || team() == value>{label}</option> }
        })
        .collect_view();
    let kind_options = Kind::ALL
        .into_iter()
        .map(|k| view! { <option value=k.key() selected=move || kind() == k.key()>{k.label()}</option> })
        .collect_view();
    // Shown once Cost Explorer has named an account (or one is asked for).
    let account_select = (!page.accounts.is_empty() || account().is_some()).then(|| {
        let options = page
            .accounts
            .iter()
            .map(|(id, name)| {
                let value = id.clone();
                let label = if name.is_empty() { id.clone() } else { format!("{name} ({id})") };
                view! { <option value=value.clone() selected=move || account().as_deref() == Some(value.as_str())>{label}</option> }
            })
            .collect_view();
        view! {
            <label>"AWS account " <select name="account" data-testid="account-select">
                <option value="">"All accounts"</option>{options}
            </select></label>
        }
    });
    let shown = page.opportunities.len();
    let more = (page.opportunities_total > shown).then(|| {
        view! {
            <p class="hint" data-testid="savings-more">
                {format!("The largest {} of {} recommendations; filter by team or kind, or download the CSV for all of them.", count(shown), count(page.opportunities_total))}
            </p>
        }
    });
    let rows = page
        .opportunities
        .into_iter()
        .map(|o| view! { <OpportunityRow o decide confirm/> })
        .collect_view();
    view! {
        <p class="headline" data-testid="savings-headline">
            <strong>{usd(page.totals.proposed)}</strong>
            {format!(" a month could be saved across {} open recommendation{}", count(page.totals.proposed_rows), if page.totals.proposed_rows == 1 { "" } else { "s" })}
            {move || (!team().is_empty() || !kind().is_empty() || account().is_some()).then_some(" matching the filters")}
            ". "
            {(page.totals.to_confirm_rows > 0).then(|| view! {
                <span data-testid="savings-to-confirm">{format!("{} more a month in {} recommendation{} resting on a workload inferred from the bill, counted once a lead confirms it. ", usd(page.totals.to_confirm), count(page.totals.to_confirm_rows), if page.totals.to_confirm_rows == 1 { "" } else { "s" })}</span>
            })}
            "Recommendations on the same spend are compounded, all kinds together: each counts only what the earlier ones leave of its project's GPU spend (idle first, then right-size, spot, schedule, and commitments last), so a project's total never exceeds what it spends. Each row shows its saving on its usage type; its Why says what it adds after the others."
        </p>
        <section class="cards" aria-label="Ledger">
            <div class="card"><h2>"Proposed"</h2><p class="figure" data-testid="ledger-proposed">{usd(page.totals.proposed)}</p><p class="hint">"a month, open recommendations"</p></div>
            <div class="card"><h2>"Accepted"</h2><p class="figure" data-testid="ledger-accepted">{usd(page.totals.accepted)}</p><p class="hint">"a month, each row after the others it was proposed with"</p></div>
            <div class="card"><h2>"Realised"</h2><p class="figure" data-testid="ledger-realised">{usd(page.totals.realised)}</p><p class="hint">"a month: each group of decisions on the same spend, its 30 days before against the days after, once"</p></div>
        </section>
        <p class="hint" data-testid="savings-window">"Window: " {window} ". Spot discount where none is observed: " {percent_value(page.spot_discount_percent)} ". "
            {computed(page.computed_at, page.refreshing)}</p>
        <Form method="GET" action="/savings" attr:class="filters" attr:data-testid="savings-filters">
            <label>"Team " <select name="team"><option value="">"All teams"</option>{team_options}</select></label>
            <label>"Kind " <select name="kind"><option value="">"All kinds"</option>{kind_options}</select></label>
            {account_select}
            <button type="submit">"Filter"</button>
            <a href=csv_href data-testid="savings-csv" rel="external">"Download CSV"</a>
            <a href="/savings/report" data-testid="savings-report-link">"Monthly report"</a>
        </Form>
        {move || account().map(|id| view! {
            <p class="hint" data-testid="account-note">"Recommendations on usage in AWS account " {id}
                " only: each still counts its usage type's spend in every account. Commitments and unmapped hosts belong to no one account and are left out; the GPU utilisation below is every account's."</p>
        })}
        <crate::ui::forms::FormError result/>
        {more}
        <table class="data recommendations" data-testid="savings-table">
            <TableHead columns=&["Kind", "Project", "Runs now", "Recommended", "Saving a month", "Evidence", "Decision"]/>
            <tbody>{rows}</tbody>
        </table>
        <Ledger entries=page.ledger/>
        <super::commitments::CommitmentsSection commitments=page.commitments/>
        <section aria-label="Utilisation">
            <h2>"GPU utilisation"</h2>
            {page.utilisation_note.map(|note| view! { <p class="hint" data-testid="utilisation-note">{note}</p> })}
            <p class="hint">"Each step is the mean of the samples in five minutes; the mean, p50 and p95 are of those step means over the window. "
                "A GPU is judged by SM activity where it publishes DCGM_FI_PROF_SM_ACTIVE, else by engine activity, else by GPU_UTIL (docs/SAVINGS.md)."</p>
            <IdleNowTable rows=page.idle_now alert_hours=page.idle_alert_hours snooze/>
            <UtilisationTable rows=page.utilisation/>
            <GpuTable rows=page.gpus total=page.gpus_total/>
        </section>
    }
}

/// One recommendation on one or two lines of a wide screen (a card on a phone): the kind,
/// what runs now in words, the change and its saving; the evidence and the decision's form
/// open on demand.
#[component]
fn OpportunityRow(
    o: Opportunity,
    decide: ServerAction<DecideSavings>,
    confirm: ServerAction<ConfirmWorkload>,
) -> impl IntoView {
    let r = o.recommendation;
    // The project's page narrowed to the account the Savings page is (the row re-renders
    // with the page's data, which `?account=` drives).
    let account = use_query_map()
        .read_untracked()
        .get("account")
        .filter(|a| !a.is_empty());
    let project_href = scope_href_in("projects", &r.project, account.as_deref());
    let evidence = if r.project.is_empty() {
        ("/teams".to_string(), "Spend by team")
    } else {
        (project_href.clone(), "Project spend")
    };
    let status = match o.decision {
        Decision::Open => "Open".to_string(),
        Decision::Accepted => format!("Accepted: {}", o.reason),
        Decision::Dismissed => format!("Dismissed: {}", o.reason),
    };
    let raw = (!r.usage_type.is_empty()).then(|| r.usage_type.clone());
    let basis = r.basis_cost.map(|b| format!("{} spent on it in the window.", usd(b)));
    let after_others = format!(
        "After the recommendations before it on the same spend, it adds {} a month.",
        usd(r.compounded_saving)
    );
    // Every row's two controls read alike; a screen reader hears which row each belongs to.
    let about = format!(
        "{} {}",
        r.kind.label(),
        if r.project.is_empty() {
            "organisation-wide"
        } else {
            tag_label(&r.project)
        }
    );
    let (why_label, decide_label) = (format!("Why: {about}"), format!("Decide: {about}"));
    let key = o.key;
    view! {
        <tr data-testid="savings-row" data-kind=r.kind.key()>
            <td data-label="Kind"><span class="badge kind">{r.kind.label()}</span></td>
            <td data-label="Project">
                {(!r.project.is_empty()).then(|| view! { <a href=project_href>{tag_label(&r.project).to_string()}</a> })}
                {(!r.team.is_empty()).then(|| view! { <span class="muted">{if r.project.is_empty() { "" } else { " · " }} {r.team.clone()}</span> })}
            </td>
            <td data-label="Runs now" data-testid="runs-now">{o.now}</td>
            <td data-label="Recommended">{r.recommended}
                {r.inferred.clone().map(|inferred| view! {
                    <super::inferred::InferredWorkload inferred project=r.project.clone() may_confirm=o.can_decide confirm/>
                })}
            </td>
            <td data-label="Saving a month" class="num">
                <span data-testid="monthly-saving" title=after_others.clone()>{usd(r.monthly_saving)}</span>
            </td>
            <td data-label="Evidence">
                <details class="why">
                    <summary aria-label=why_label>"Why"</summary>
                    <p>{r.detail}</p>
                    <p data-testid="compounded-saving">{after_others}</p>
                    {raw.map(|u| view! { <p>"Usage type " <code data-testid="usage-type">{u}</code></p> })}
                    {basis.map(|b| view! { <p>{b}</p> })}
                    <a href=evidence.0>{evidence.1}</a>
                </details>
            </td>
            <td data-label="Decision" data-testid="decision">
                <span class="decision-status">{status}</span>
                {o.can_decide.then(|| view! {
                    <details class="decide">
                        <summary data-testid="decide-open" aria-label=decide_label>"Decide"</summary>
                        <ActionForm action=decide attr:class="decide-form" attr:data-testid="decide-form">
                            <input type="hidden" name="key" value=key/>
                            <select name="decision" aria-label="Decision">
                                <option value="accepted">"Accept"</option>
                                <option value="dismissed">"Dismiss"</option>
                                <option value="open">"Reopen"</option>
                            </select>
                            <input type="text" name="reason" placeholder="Reason" required maxlength="2000" aria-label="Reason"/>
                            <button type="submit">"Save"</button>
                        </ActionForm>
                    </details>
                })}
            </td>
        </tr>
    }
}

#[component]
fn Ledger(entries: Vec<crate::savings::model::LedgerEntry>) -> impl IntoView {
    if entries.is_empty() {
        return view! { <p class="hint" data-testid="ledger-empty">"Nothing accepted yet: accepted recommendations are measured here."</p> }.into_any();
    }
    let rows = entries
        .into_iter()
        .map(|e| {
            view! {
                <tr data-testid="ledger-row">
                    <td>{e.kind.label()}</td>
                    <td>{tag_label(&e.project).to_string()}</td>
                    <td><code>{e.usage_type}</code></td>
                    <td>{e.decided_on.to_string()} " by " {e.decided_by}</td>
                    <td>{e.reason}</td>
                    <td class="num">{usd(e.proposed_monthly_saving)}</td>
                    <td class="num" data-testid="ledger-row-accepted">{usd(e.accepted_monthly_saving)}</td>
                    <td class="num">{usd(e.spend_before)}</td>
                    <td class="num">{e.spend_after_per_30_days.map(usd).unwrap_or_else(|| "no settled day yet".into())}</td>
                    <td class="num">{e.realised_monthly_saving.map(usd).unwrap_or_default()} " (" {count(e.days_after)} " days"
                        {(e.measured_with > 0).then(|| format!("; measured with {} other decision{} on the same spend", e.measured_with, if e.measured_with == 1 { "" } else { "s" }))}
                        ")"</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2>"Ledger"</h2>
        <DataTable testid="ledger-table" columns=&["Kind", "Project", "Usage type", "Decided", "Reason", "Proposed a month", "Accepted a month (after the others)", "30 days before", "After, per 30 days", "Realised a month"]>{rows}</DataTable>
    }
    .into_any()
}

#[component]
fn UtilisationTable(rows: Vec<crate::savings::model::Utilisation>) -> impl IntoView {
    (!rows.is_empty()).then(|| {
        let body = rows
            .into_iter()
            .map(|u| {
                let coverage = u.coverage.map(percent_value).unwrap_or_else(|| "no billing".into());
                view! {
                    <tr data-testid="utilisation-row" data-project=u.project.clone()>
                        <td>{tag_label(&u.project).to_string()}</td>
                        <td class="num">{count(u.gpus)}</td>
                        <td data-testid="judged-by">{u.judged_by}</td>
                        <td class="num" data-testid="mean">{percent_value(u.mean)}</td>
                        <td class="num">{percent_value(u.p50)} " / " {percent_value(u.p95)}</td>
                        <td>{u.band}</td>
                        <td class="num">{number(u.observed_gpu_hours, 1)} " (" {coverage} ")"</td>
                        <td class="num">{number(u.idle_gpu_hours, 1)}</td>
                        <td class="num">{count(u.idle_gpus_now)}</td>
                        <td class="num">{u.peak_memory_used_mib.map(|m| format!("{} MiB", number(m, 0))).unwrap_or_default()}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <DataTable testid="utilisation-table" columns=&["Project or host", "GPUs", "Judged by", "Mean", "p50 / p95", "Band (on the mean)", "Observed GPU-hours (coverage)", "Idle GPU-hours", "Idle now", "Peak memory"]>{body}</DataTable>
        }
    })
}

/// Every reporting GPU, flagged ones first: the counter it was judged by and its verdict.
#[component]
fn GpuTable(rows: Vec<crate::savings::model::GpuUse>, total: usize) -> impl IntoView {
    (!rows.is_empty()).then(|| {
        let more = (total > rows.len())
            .then(|| format!("The first {} of {} GPUs, flagged ones first.", count(rows.len()), count(total)));
        let body = rows
            .into_iter()
            .map(|g| {
                let flag = if g.busy_but_ineffective {
                    "busy-but-ineffective"
                } else if g.idle_hours > rust_decimal::Decimal::ZERO {
                    "idle"
                } else {
                    ""
                };
                let memory = match (g.peak_memory_used_mib, g.memory_total_mib) {
                    (Some(used), Some(total)) => format!("{} of {} MiB", number(used, 0), number(total, 0)),
                    (Some(used), None) => format!("{} MiB", number(used, 0)),
                    _ => String::new(),
                };
                view! {
                    <tr data-testid="gpu-row" data-flag=flag>
                        <td>{tag_label(&g.project).to_string()}</td>
                        <td><code>{g.host}</code> " #" {g.gpu}</td>
                        <td data-testid="gpu-judged-by" title=g.judged_by.field()>{g.judged_by.label()}</td>
                        <td class="num">{percent_value(g.mean)}</td>
                        <td class="num">{percent_value(g.p50)} " / " {percent_value(g.p95)}</td>
                        <td class="num">{g.gpu_util_mean.map(percent_value).unwrap_or_default()}</td>
                        <td class="num">{g.sm_active_mean.map(percent_value).unwrap_or_default()}</td>
                        <td class="num">{g.tensor_active_mean.map(percent_value).unwrap_or_default()}</td>
                        <td class="num">{g.sm_occupancy_mean.map(percent_value).unwrap_or_default()}</td>
                        <td class="num">{memory}</td>
                        <td data-testid="gpu-verdict">{g.verdict}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h3>"Per GPU"</h3>
            {more.map(|m| view! { <p class="hint">{m}</p> })}
            <DataTable testid="gpu-table" columns=&["Project or host", "GPU", "Judged by", "Mean", "p50 / p95", "GPU util mean", "SM activity mean", "Tensor mean", "SM occupancy mean", "Peak memory", "Verdict"]>{body}</DataTable>
        }
    })
}

/// GPUs and endpoints idle now, with what they have cost while idle and a snooze for their
/// alert emails.
#[component]
fn IdleNowTable(
    rows: Vec<crate::savings::model::IdleRow>,
    alert_hours: u32,
    snooze: ServerAction<SnoozeIdle>,
) -> impl IntoView {
    let result: Signal<_> = snooze.value().into();
    (!rows.is_empty()).then(|| {
        let body = rows
            .into_iter()
            .map(|row| {
                let resource = row.idle.resource.clone();
                let snoozed = row
                    .snoozed_until
                    .clone()
                    .map(|until| format!("snoozed until {until}: {}", row.snooze_reason));
                view! {
                    <tr data-testid="idle-row">
                        <td><code>{row.idle.resource.clone()}</code></td>
                        <td>{tag_label(&row.idle.project).to_string()}</td>
                        <td>{row.idle.team.clone()}</td>
                        <td class="num">{count(row.idle.gpus as usize)}</td>
                        <td class="num" data-testid="idle-hours">{number(row.hours, 1)}</td>
                        <td class="num">{row.usd_so_far.map(usd).unwrap_or_default()}</td>
                        <td data-testid="idle-snooze">{snoozed}
                            {row.can_snooze.then(|| view! {
                                <details class="inline-form">
                                    <summary>"Snooze"</summary>
                                    <ActionForm action=snooze attr:class="inline" attr:data-testid="snooze-form">
                                        <input type="hidden" name="resource" value=resource/>
                                        <label>"Hours " <input type="number" name="hours" min="1" max="168" value="24" required/></label>
                                        <input type="text" name="reason" placeholder="Reason" required maxlength="2000" aria-label="Reason"/>
                                        <button type="submit">"Snooze"</button>
                                    </ActionForm>
                                </details>
                            })}
                        </td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h3>"Idle now"</h3>
            <p class="hint">{format!("A GPU or endpoint idle for more than {alert_hours} hours emails its team's owners once per idle stretch. A lead of the team or an admin can snooze that for 1 to 168 hours.")}</p>
            <crate::ui::forms::FormError result/>
            <DataTable testid="idle-table" columns=&["Resource", "Project", "Team", "GPUs", "Hours idle", "Spent while idle", "Alerts"]>{body}</DataTable>
        }
    })
}

/// When the recommendations were computed, and whether newer ones are on their way: the page
/// answers from the last complete set while the data that moved is read again.
fn computed(at: Option<chrono::DateTime<chrono::Utc>>, refreshing: bool) -> String {
    let Some(at) = at else { return String::new() };
    let when = at.format("%Y-%m-%d %H:%M UTC");
    match refreshing {
        true => format!(
            "Computed {when}; newer figures (the data, the day or utilisation moved) are being computed: reload in a minute."
        ),
        false => format!("Computed {when}, from the current data."),
    }
}
