//! The admins' form for the org default policy or a team's override, with each field's
//! error beside it.

use leptos::prelude::*;

use crate::enforcement::server_fns::SavePolicy;

#[component]
pub fn PolicyForm(teams: Vec<String>, action: ServerAction<SavePolicy>) -> impl IntoView {
    let result: Signal<_> = action.value().into();
    let field_error = move |field| crate::ui::forms::field_error(result, field);
    view! {
        <details class="card" data-testid="policy-form">
            <summary>"Set a policy (the org default, or a team's override)"</summary>
            <ActionForm action attr:class="stack" attr:novalidate=true>
                <label>"Applies to"
                    <select name="team">
                        <option value="">"Org default"</option>
                        {teams.into_iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                    </select>
                </label>
                {field_error("team")}
                <label>"Spend limit per period (USD)" <input type="text" name="limit" inputmode="decimal" value="1000.00" required/></label>
                {field_error("limit")}
                <label>"Period"
                    <select name="period">
                        <option value="monthly">"monthly"</option>
                        <option value="quarterly">"quarterly"</option>
                        <option value="annual">"annual"</option>
                    </select>
                </label>
                {field_error("period")}
                <label>"Judged on"
                    <select name="metric">
                        <option value="unblended">"unblended cost (as billed each day)"</option>
                        <option value="amortized">"amortized cost (reserved and Savings Plan fees spread over their days)"</option>
                    </select>
                </label>
                {field_error("metric")}
                <fieldset>
                    <legend>"Actions"</legend>
                    <label><input type="checkbox" name="notify" value="on" checked/> " notify (email the team owners and finance admins)"</label>
                    <label><input type="checkbox" name="flag" value="on" checked/> " flag (a badge on the project, team and Overview)"</label>
                    <label><input type="checkbox" name="stop" value="on"/> " stop (the project's own GPUs, or an AWS Budgets action)"</label>
                </fieldset>
                {field_error("actions")}
                <label>"Mode"
                    <select name="mode">
                        <option value="dry-run">"dry-run: record only"</option>
                        <option value="manual">"manual: an admin approves each action"</option>
                        <option value="automatic">"automatic"</option>
                    </select>
                </label>
                {field_error("mode")}
                <fieldset>
                    <legend>"What stop does (when stop is ticked)"</legend>
                    <label>"How"
                        <select name="stop_type">
                            <option value="">"stop the project's own GPU resources, found by its tag"</option>
                            <option value="APPLY_IAM_POLICY">"AWS Budgets action APPLY_IAM_POLICY: attach a deny policy for GPU launches"</option>
                            <option value="RUN_SSM_DOCUMENTS">"AWS Budgets action RUN_SSM_DOCUMENTS: stop listed EC2 instances"</option>
                        </select>
                    </label>
                    {field_error("stop_type")}
                    <fieldset>
                        <legend>"The project's own resources"</legend>
                        <label><input type="checkbox" name="stop_ec2" value="on" checked/> " EC2 instances (stopped, never terminated; reversal starts them)"</label>
                        <label><input type="checkbox" name="stop_notebooks" value="on" checked/> " SageMaker notebooks (reversal starts them)"</label>
                        <label><input type="checkbox" name="stop_training_jobs" value="on"/> " training jobs (progress since the last checkpoint is lost; cannot be restarted)"</label>
                        <label><input type="checkbox" name="stop_processing_jobs" value="on"/> " processing jobs (cannot be restarted)"</label>
                        <label><input type="checkbox" name="stop_endpoints" value="on"/> " real-time endpoints (deleted, config kept; reversal creates them again)"</label>
                        {field_error("stop_resources")}
                        <label>"Regions (comma-separated; empty: BURNRATE_AWS_REGIONS)" <input type="text" name="stop_regions" placeholder="us-east-1, us-west-2"/></label>
                        {field_error("stop_regions")}
                        <label>"Another AWS account (12 digits; empty: burnrate's own; needs BURNRATE_AWS_ASSUME_ROLE)" <input type="text" name="stop_account" inputmode="numeric" placeholder="210987654321"/></label>
                        {field_error("stop_account")}
                        <label>"More tag keys of controllers that replace stopped instances (one per line; Auto Scaling, EC2 and Spot Fleet, EMR, Karpenter, AWS Batch and EKS node groups are known)" <textarea name="stop_managed_by_tags" rows="2" placeholder="example.com/scheduler"></textarea></label>
                        {field_error("stop_managed_by_tags")}
                        <label>"Instances with instance-store (NVMe) volumes, which a stop erases (g4dn, g5, g6, p4d, p5 and more)"
                            <select name="stop_instance_store">
                                <option value="skip" selected>"leave them running, saying why"</option>
                                <option value="allow">"stop them too: their instance-store data is lost"</option>
                            </select>
                        </label>
                        {field_error("stop_instance_store")}
                    </fieldset>
                    <fieldset>
                        <legend>"Relaunch prevented (APPLY_IAM_POLICY; optional beside the project's own resources: a deny policy attached to these roles, detached on reversal)"</legend>
                        <label>"Deny policy ARN (beside the project's resources, leave it empty: burnrate makes a deny policy of the violating project alone)" <input type="text" name="iam_policy_arn" placeholder="arn:aws:iam::123456789012:policy/deny-gpu-launch"/></label>
                        {field_error("iam_policy_arn")}
                        <label>"IAM roles to attach it to (one per line)" <textarea name="iam_roles" rows="2"></textarea></label>
                        {field_error("iam_roles")}
                    </fieldset>
                    <fieldset>
                        <legend>"Through an AWS Budgets action"</legend>
                        <label>"Execution role ARN" <input type="text" name="execution_role_arn" placeholder="arn:aws:iam::123456789012:role/budgets-actions"/></label>
                        {field_error("execution_role_arn")}
                        <label>"EC2 instance ids (one per line)" <textarea name="instance_ids" rows="2"></textarea></label>
                        {field_error("instance_ids")}
                        <label>"Instances' region" <input type="text" name="instance_region" placeholder="us-east-1"/></label>
                        {field_error("instance_region")}
                    </fieldset>
                </fieldset>
                <crate::ui::forms::FormError result beside_fields=true/>
                <button type="submit">"Save policy"</button>
            </ActionForm>
        </details>
    }
}
