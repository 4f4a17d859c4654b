"""What AWS's documentation says beyond botocore's model, for the operations burnrate calls.
Each rule names its page and quotes the sentence; a rule reads the decoded request (and,
for answers, the answer) keyed by the model's member names, and returns (path, message)
pairs."""

REQUEST_RULES = {}
ANSWER_RULES = {}


def rule(service, operation, page, quote, answer=False, signed=False):
    """`signed`: the rule reads the day the request was signed too (its credential scope's
    date, UTC), as `check(value, signed_on)`."""
    def register(check):
        check.page, check.quote, check.signed = page, quote, signed
        (ANSWER_RULES if answer else REQUEST_RULES).setdefault((service, operation), []).append(check)
        return check
    return register


def request(service, operation, value, signed_on=None):
    if not isinstance(value, dict):
        return []
    return [issue for check in REQUEST_RULES.get((service, operation), [])
            for issue in (check(value, signed_on) if check.signed else check(value))]


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


@rule("ce", "GetSavingsPlansCoverage", SP_COVERAGE,
      "The measurement that you want your Savings Plans coverage reported in. The only valid value is "
      "SpendCoveredBySavingsPlans.")
def sp_coverage_metrics(value):
    return [("$.Metrics", f"GetSavingsPlansCoverage reports no metric '{m}'")
            for m in value.get("Metrics") or [] if m != "SpendCoveredBySavingsPlans"]


CW_GET_METRIC_DATA = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html"


def _seconds(value):
    import datetime

    if isinstance(value, datetime.datetime):
        return value.timestamp()
    return float(value) if isinstance(value, (int, float)) else None


@rule("cloudwatch", "GetMetricData", CW_GET_METRIC_DATA,
      "If the StartTime parameter specifies a time stamp that is greater than 15 days ago, you must "
      "specify the period as follows or no data points in that time range is returned: Start time between "
      "15 and 63 days ago - Use a multiple of 300 seconds (5 minutes). Start time greater than 63 days ago - "
      "Use a multiple of 3600 seconds (1 hour).", signed=True)
def period_for_start_age(value, signed_on):
    """The request was sent on or after the start of the day it was signed, so a StartTime
    more than 15 (63) days before that is at least that old."""
    start = _seconds(value.get("StartTime"))
    if signed_on is None or start is None:
        return []
    age_days = (signed_on - start) / 86400
    out = []
    for i, query in enumerate(value.get("MetricDataQueries") or []):
        period = (query.get("MetricStat") or {}).get("Period", query.get("Period"))
        if not isinstance(period, int):
            continue
        if age_days > 63 and period % 3600:
            out.append((f"$.MetricDataQueries[{i}]", f"Period {period} with StartTime over 63 days old: no points"))
        elif age_days > 15 and period % 300:
            out.append((f"$.MetricDataQueries[{i}]", f"Period {period} with StartTime over 15 days old: no points"))
    return out


@rule("cloudwatch", "GetMetricData", CW_GET_METRIC_DATA,
      "A single GetMetricData call can include as many as 500 MetricDataQuery structures.")
def at_most_500_queries(value):
    queries = value.get("MetricDataQueries") or []
    return [("$.MetricDataQueries", f"{len(queries)} queries, AWS takes at most 500")] if len(queries) > 500 else []


@rule("cloudwatch", "GetMetricData",
      "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html",
      "This name must be unique within a single call to GetMetricData. ... The valid characters are letters, "
      "numbers, and underscore. The first character must be a lowercase letter. ... Within one MetricDataQuery "
      "object, you must specify either Expression or MetricStat but not both.")
def query_ids_and_kinds(value):
    import re

    out, seen = [], set()
    for i, query in enumerate(value.get("MetricDataQueries") or []):
        query_id = query.get("Id", "")
        if not re.fullmatch(r"[a-z][A-Za-z0-9_]*", query_id):
            out.append((f"$.MetricDataQueries[{i}].Id", f"Id '{query_id}' must start lower-case, then letters, digits, _"))
        if query_id in seen:
            out.append((f"$.MetricDataQueries[{i}].Id", f"Id '{query_id}' is not unique in the call"))
        seen.add(query_id)
        if ("MetricStat" in query) == ("Expression" in query):
            out.append((f"$.MetricDataQueries[{i}]", "exactly one of MetricStat and Expression"))
    return out


@rule("ec2", "DescribeInstances", "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html",
      "MaxResults: ... You cannot specify this parameter and the instance IDs parameter in the same request.")
def no_page_size_with_ids(value):
    if value.get("MaxResults") is not None and value.get("InstanceIds"):
        return [("$.MaxResults", "MaxResults with InstanceIds in one DescribeInstances")]
    return []


TAGGING = "https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html"


@rule("resourcegroupstaggingapi", "GetResources", TAGGING,
      "ResourcesPerPage: ... You can specify a minimum of 1 and a maximum value of 100. TagsPerPage: ... You can "
      "set TagsPerPage to a minimum of 100 items up to a maximum of 500 items. ResourceTypeFilters: ... The array "
      "can include up to 100 items. ResourceARNList: You can't specify both this parameter and the "
      "ResourceTypeFilters parameter ... the TagFilters parameter ... any of the pagination parameters")
def tagging_limits(value):
    out = []
    per_page = value.get("ResourcesPerPage")
    if per_page is not None and not 1 <= int(per_page) <= 100:
        out.append(("$.ResourcesPerPage", f"ResourcesPerPage {per_page} outside 1..100"))
    tags_per_page = value.get("TagsPerPage")
    if tags_per_page is not None and not 100 <= int(tags_per_page) <= 500:
        out.append(("$.TagsPerPage", f"TagsPerPage {tags_per_page} outside 100..500"))
    if len(value.get("ResourceTypeFilters") or []) > 100:
        out.append(("$.ResourceTypeFilters", "more than 100 resource types"))
    if value.get("ResourceARNList") and any(
            value.get(k) for k in ("TagFilters", "ResourceTypeFilters", "ResourcesPerPage", "TagsPerPage", "PaginationToken")):
        out.append(("$.ResourceARNList", "ResourceARNList with filters or paging"))
    return out


@rule("resourcegroupstaggingapi", "GetResources", TAGGING,
      "If you specify more than one filter in a single request, the response returns only those resources that "
      "satisfy all filters. If you specify a filter that contains more than one value for a key, the response "
      "returns resources that match any of the specified values for that key. If you don't specify a value for a "
      "key, the response returns all resources that are tagged with that key, with any or no value.",
      answer=True)
def tagging_answers_match_the_filters(request_value, answer_value):
    out = []
    for i, mapping in enumerate(answer_value.get("ResourceTagMappingList") or []):
        tags = {t.get("Key"): t.get("Value") for t in mapping.get("Tags") or []}
        for f in request_value.get("TagFilters") or []:
            wanted = f.get("Values") or []
            if f.get("Key") not in tags or (wanted and tags[f.get("Key")] not in wanted):
                out.append((f"$.ResourceTagMappingList[{i}]", f"a resource outside the TagFilter on '{f.get('Key')}'"))
    return out


@rule("application-autoscaling", "DescribeScalableTargets",
      "https://docs.aws.amazon.com/autoscaling/application/APIReference/API_DescribeScalableTargets.html",
      "MaxResults: The maximum number of scalable targets. This value can be between 1 and 50. ... If you specify "
      "a scalable dimension, you must also specify a resource ID.")
def scalable_targets_limits(value):
    out = []
    limit = value.get("MaxResults")
    if limit is not None and not 1 <= int(limit) <= 50:
        out.append(("$.MaxResults", f"MaxResults {limit} outside 1..50"))
    if value.get("ScalableDimension") and not value.get("ResourceIds"):
        out.append(("$.ScalableDimension", "a ScalableDimension without ResourceIds"))
    return out
