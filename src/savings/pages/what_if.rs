//! `/what-if`: model size and workload, instances × hours × days, tokens per day → what it
//! costs on-demand, on spot and under a commitment, which types fit, and an always-on
//! endpoint against managed per-token prices. A GET form: the answer is computed on the
//! server, the URL can be shared, and it works without JavaScript.

use leptos::prelude::*;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::format::{number, percent_value, quantity, usd, usd_precise};
use crate::savings::model::{Precision, WhatIf, WhatIfQuery, WhatIfRow, Workload};
use crate::savings::server_fns::get_what_if;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn WhatIfPage() -> impl IntoView {
    let query = use_query_map();
    let input = move || {
        let q = query.read();
        WhatIfQuery {
            params_b: q.get("params_b"),
            precision: q.get("precision"),
            workload: q.get("workload"),
            instances: q.get("instances"),
            hours_per_day: q.get("hours_per_day"),
            days: q.get("days"),
            tokens_per_day: q.get("tokens_per_day"),
        }
    };
    let data = crate::codec::resource(input, |q| {
        get_what_if(
            q.params_b,
            q.precision,
            q.workload,
            q.instances,
            q.hours_per_day,
            q.days,
            q.tokens_per_day,
        )
    });
    view! {
        <PageHeader title="What if" parent=("/savings", "GPU savings")/>
        <p class="hint">"Prices from the GPU catalogue with this organisation's pricing, spot discounts as observed in its own spend where it has any."</p>
        {crate::ui::page::loaded(data, |answer| view! { <WhatIfBody answer/> })}
    }
}

#[component]
fn WhatIfBody(answer: WhatIf) -> impl IntoView {
    let q = answer.query.clone();
    let value = |v: &Option<String>, default: &str| v.clone().unwrap_or_else(|| default.to_string());
    let workload = q.workload.clone().unwrap_or_else(|| "serving".into());
    let precision = q.precision.clone().unwrap_or_else(|| "bf16".into());
    let errors = answer.errors.clone();
    let error_for = move |field: &str| {
        errors
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| view! { <span class="field-error" role="alert">{m.clone()}</span> })
    };
    let workloads = Workload::ALL
        .into_iter()
        .filter(|w| *w != Workload::Unknown)
        .map(|w| view! { <option value=w.key() selected=workload == w.key()>{w.key()}</option> })
        .collect_view();
    let precisions = Precision::ALL
        .into_iter()
        .map(|p| view! { <option value=p.key() selected=precision == p.key()>{p.key()}</option> })
        .collect_view();
    let need = answer
        .memory_needed_gib
        .map(|n| format!("The model needs about {} GiB of GPU memory.", quantity(n, 1)));
    view! {
        <Form method="GET" action="/what-if" attr:class="stack" attr:data-testid="what-if-form">
            <label>"Model size (billions of parameters) " <input type="text" inputmode="decimal" name="params_b" value=value(&q.params_b, "")/></label>
            {error_for("params_b")}
            <label>"Precision " <select name="precision">{precisions}</select></label>
            <label>"Workload " <select name="workload">{workloads}</select></label>
            <label>"Instances " <input type="text" inputmode="numeric" name="instances" value=value(&q.instances, "1")/></label>
            {error_for("instances")}
            <label>"Hours a day " <input type="text" inputmode="decimal" name="hours_per_day" value=value(&q.hours_per_day, "24")/></label>
            {error_for("hours_per_day")}
            <label>"Days (a month, or a training run) " <input type="text" inputmode="numeric" name="days" value=value(&q.days, "30")/></label>
            {error_for("days")}
            <label>"Tokens a day (serving) " <input type="text" inputmode="numeric" name="tokens_per_day" value=value(&q.tokens_per_day, "")/></label>
            {error_for("tokens_per_day")}
            <button type="submit" data-testid="what-if-submit">"Compare"</button>
        </Form>
        <p data-testid="what-if-need">{need}</p>
        <p class="hint">{format!("{} instance-hours. Commitment: a 1-year no-upfront Savings Plan at {} off.", number(answer.hours, 1), percent_value(answer.savings_plan_discount * rust_decimal::Decimal::ONE_HUNDRED))}</p>
        <h2>"NVIDIA types that fit, cheapest first"</h2>
        <PriceTable rows=answer.fits testid="what-if-fits"/>
        {(!answer.neuron.is_empty()).then(|| view! {
            <h2>"AWS Neuron alternatives"</h2>
            <p class="hint">"Inferentia and Trainium need the Neuron SDK: not drop-in replacements for CUDA code."</p>
            <PriceTable rows=answer.neuron testid="what-if-neuron"/>
        })}
        <h2>"Self-hosted endpoint or managed per-token"</h2>
        <p data-testid="what-if-endpoint">{answer.endpoint_monthly.map(|m| format!("An always-on endpoint on the cheapest fit bills {} a month, traffic or not.", usd(m)))}</p>
        <DataTable testid="what-if-managed" columns=&["Managed model", "Per million tokens", "A month at your volume", "Break-even, tokens a day"]>
            {answer.managed.into_iter().map(|m| view! {
                <tr>
                    <td>{m.name}</td>
                    <td class="num">{usd(m.usd_per_million_tokens)}</td>
                    <td class="num" data-testid="managed-monthly">{usd(m.monthly)}</td>
                    <td class="num">{m.break_even_tokens_per_day.map(|t| number(t, 0)).unwrap_or_default()}</td>
                </tr>
            }).collect_view()}
        </DataTable>
    }
}

#[component]
fn PriceTable(rows: Vec<WhatIfRow>, testid: &'static str) -> impl IntoView {
    view! {
        <DataTable testid=testid columns=&["Instance type", "Accelerators", "GPU memory", "$/h", "On-demand", "Spot", "Commitment"]>
            {rows.into_iter().map(|r| view! {
                <tr data-testid="what-if-row">
                    <td><code>{r.instance_type}</code></td>
                    <td>{r.accelerators}</td>
                    <td class="num">{quantity(r.total_memory_gib, 1)} " GiB"</td>
                    <td class="num">{usd_precise(r.hourly, 4)}</td>
                    <td class="num" data-testid="on-demand">{usd(r.on_demand)}</td>
                    <td class="num">{match r.spot {
                        Some(spot) => format!("{} ({} off{})", usd(spot), percent_value(r.spot_discount * rust_decimal::Decimal::ONE_HUNDRED), if r.spot_observed { ", observed" } else { "" }),
                        None => "not for serving".to_string(),
                    }}</td>
                    <td class="num">{usd(r.commitment)}</td>
                </tr>
            }).collect_view()}
        </DataTable>
    }
}
