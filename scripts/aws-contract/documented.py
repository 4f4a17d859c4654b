"""What AWS's documentation says beyond botocore's model, for the operations burnrate calls.
Each rule names its page and quotes the sentence; a rule reads the decoded request (and,
for answers, the answer) keyed by the model's member names, and returns (path, message)
pairs."""

REQUEST_RULES = {}
ANSWER_RULES = {}


def rule(service, operation, page, quote, answer=False):
    def register(check):
        check.page, check.quote = page, quote
        (ANSWER_RULES if answer else REQUEST_RULES).setdefault((service, operation), []).append(check)
        return check
    return register


def request(service, operation, value):
    if not isinstance(value, dict):
        return []
    return [issue for check in REQUEST_RULES.get((service, operation), []) for issue in check(value)]


def answer(service, operation, request_value, answer_value):
    if not isinstance(answer_value, dict):
        return []
    return [issue for check in ANSWER_RULES.get((service, operation), [])
            for issue in check(request_value or {}, answer_value)]


import shapes  # noqa: E402

# EC2's model enumerates PlatformValues as `Windows`; the API reference says what EC2 answers:
# "The platform. This value is windows for Windows instances; otherwise, it is empty."
# (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Instance.html, Platform).
shapes.EXTRA_ENUM["PlatformValues"] = {"windows"}


CE_USAGE = "https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetCostAndUsage.html"


@rule("ce", "GetCostAndUsage", CE_USAGE,
      "You can group Amazon Web Services costs using up to two different groups, either dimensions, "
      "tag keys, cost categories, or any two group by types.")
def at_most_two_groups(value):
    groups = value.get("GroupBy") or []
    return [("$.GroupBy", f"{len(groups)} GroupBy, AWS takes at most 2")] if len(groups) > 2 else []


USAGE_GROUP_DIMENSIONS = {
    "AZ", "INSTANCE_TYPE", "LEGAL_ENTITY_NAME", "INVOICING_ENTITY", "LINKED_ACCOUNT", "OPERATION",
    "PLATFORM", "PURCHASE_TYPE", "SERVICE", "TENANCY", "RECORD_TYPE", "USAGE_TYPE",
}


@rule("ce", "GetCostAndUsage", CE_USAGE,
      "Valid values for the DIMENSION type are AZ, INSTANCE_TYPE, LEGAL_ENTITY_NAME, INVOICING_ENTITY, "
      "LINKED_ACCOUNT, OPERATION, PLATFORM, PURCHASE_TYPE, SERVICE, TENANCY, RECORD_TYPE, and USAGE_TYPE.")
def group_by_dimensions(value):
    return [(f"$.GroupBy[{i}].Key", f"GroupBy DIMENSION '{g.get('Key')}' is not one AWS groups by")
            for i, g in enumerate(value.get("GroupBy") or [])
            if g.get("Type") == "DIMENSION" and g.get("Key") not in USAGE_GROUP_DIMENSIONS]


CW_METRIC_DATA = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricStat.html"


@rule("cloudwatch", "GetMetricData", CW_METRIC_DATA,
      "For high-resolution metrics that are collected at intervals of less than one minute, the period "
      "can be 1, 5, 10, 20, 30, 60, or any multiple of 60.")
def metric_periods(value):
    out = []
    for i, query in enumerate(value.get("MetricDataQueries") or []):
        period = (query.get("MetricStat") or {}).get("Period", query.get("Period"))
        if isinstance(period, int) and period not in (1, 5, 10, 20, 30) and period % 60:
            out.append((f"$.MetricDataQueries[{i}]", f"Period {period} is neither 1, 5, 10, 20, 30 nor a multiple of 60"))
    return out


def _dimension_keys(expression):
    """Every `Dimensions.Key` in a Cost Explorer filter expression, at any depth."""
    if not isinstance(expression, dict):
        return []
    keys = [expression["Dimensions"].get("Key")] if isinstance(expression.get("Dimensions"), dict) else []
    for nested in (expression.get("And") or []) + (expression.get("Or") or []) + [expression.get("Not")]:
        keys += _dimension_keys(nested)
    return keys


def _daily_or_monthly(operation, value):
    granularity = value.get("Granularity")
    if granularity is not None and granularity not in ("DAILY", "MONTHLY"):
        return [("$.Granularity", f"{operation} supports only DAILY and MONTHLY, not {granularity}")]
    return []


SP_UTILIZATION = "https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetSavingsPlansUtilization.html"
SP_UTILIZATION_FILTERS = {"LINKED_ACCOUNT", "SAVINGS_PLAN_ARN", "SAVINGS_PLANS_TYPE", "REGION", "PAYMENT_OPTION",
                          "INSTANCE_TYPE_FAMILY"}


@rule("ce", "GetSavingsPlansUtilization", SP_UTILIZATION,
      "The GetSavingsPlansUtilization operation supports only DAILY and MONTHLY granularities.")
def sp_utilization_granularity(value):
    return _daily_or_monthly("GetSavingsPlansUtilization", value)


@rule("ce", "GetSavingsPlansUtilization", SP_UTILIZATION,
      "Filters Savings Plans utilization coverage data for active Savings Plans dimensions. You can filter "
      "data with the following dimensions: LINKED_ACCOUNT, SAVINGS_PLAN_ARN, SAVINGS_PLANS_TYPE, REGION, "
      "PAYMENT_OPTION, INSTANCE_TYPE_FAMILY")
def sp_utilization_filters(value):
    return [("$.Filter", f"GetSavingsPlansUtilization filters on no dimension '{key}'")
            for key in _dimension_keys(value.get("Filter")) if key not in SP_UTILIZATION_FILTERS]


SP_COVERAGE = "https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetSavingsPlansCoverage.html"


@rule("ce", "GetSavingsPlansCoverage", SP_COVERAGE,
      "Granularity can't be set if GroupBy is set. The GetSavingsPlansCoverage operation supports only "
      "DAILY and MONTHLY granularities.")
def sp_coverage_granularity(value):
    out = _daily_or_monthly("GetSavingsPlansCoverage", value)
    if value.get("Granularity") is not None and value.get("GroupBy"):
        out.append(("$.Granularity", "GetSavingsPlansCoverage takes no Granularity with GroupBy"))
    return out
