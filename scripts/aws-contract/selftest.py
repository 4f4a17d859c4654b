"""The checker fails what it must: hand-written exchanges, each a known drift from AWS's
model or documentation, and their correct twins, which must pass. Run by
`check.py --self-test` before the step reads the suite's recording."""

import base64
import json
import struct


def _cbor(value):
    """A small CBOR encoder for the cases below (maps, lists, text, ints, floats)."""
    def head(major, n):
        if n < 24:
            return bytes([major << 5 | n])
        for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
            if n < 1 << (8 * size):
                return bytes([major << 5 | info]) + n.to_bytes(size, "big")
        raise ValueError(n)
    if isinstance(value, bool):
        return bytes([0xF5 if value else 0xF4])
    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, float):
        return b"\xfb" + struct.pack(">d", value)
    if isinstance(value, str):
        raw = value.encode()
        return head(3, len(raw)) + raw
    if isinstance(value, list):
        return head(4, len(value)) + b"".join(_cbor(v) for v in value)
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(_cbor(k) + _cbor(v) for k, v in value.items())
    raise TypeError(value)


def _auth(service):
    return f"AWS4-HMAC-SHA256 Credential=AKID/20261128/us-east-1/{service}/aws4_request, SignedHeaders=host, Signature=0"


def json_exchange(service, target, version, request, answer, status=200):
    return {
        "front": "selftest", "test": "selftest", "method": "POST", "uri": "/",
        "authorization": _auth(service), "target": target,
        "content_type": f"application/x-amz-json-{version}",
        "request": base64.b64encode(json.dumps(request).encode()).decode(),
        "status": status, "answer": base64.b64encode(json.dumps(answer).encode()).decode(),
    }


def ec2_exchange(form, answer_xml, status=200):
    return {
        "front": "selftest", "test": "selftest", "method": "POST", "uri": "/",
        "authorization": _auth("ec2"), "content_type": "application/x-www-form-urlencoded; charset=utf-8",
        "request": base64.b64encode(form.encode()).decode(),
        "status": status, "answer": base64.b64encode(answer_xml.encode()).decode(),
    }


def cbor_exchange(operation, request, answer):
    return {
        "front": "selftest", "test": "selftest", "method": "POST",
        "uri": f"/service/GraniteServiceVersion20100801/operation/{operation}",
        "authorization": _auth("monitoring"), "content_type": "application/cbor",
        "smithy_protocol": "rpc-v2-cbor",
        "request": base64.b64encode(_cbor(request)).decode(),
        "status": 200, "answer": base64.b64encode(_cbor(answer)).decode(),
    }


CE = ("ce", "AWSInsightsIndexService.GetCostAndUsage", "1.1")
USAGE = {
    "TimePeriod": {"Start": "2026-11-01", "End": "2026-11-28"},
    "Granularity": "DAILY",
    "Metrics": ["UnblendedCost"],
    "GroupBy": [{"Type": "DIMENSION", "Key": "LINKED_ACCOUNT"}, {"Type": "TAG", "Key": "project"}],
}
USAGE_ANSWER = {"ResultsByTime": [], "DimensionValueAttributes": []}

INSTANCES = ("Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag-key&Filter.1.Value.1=project"
             "&MaxResults={limit}")
RESERVATION = ("<item><reservationId>r-1</reservationId><ownerId>123456789012</ownerId><instancesSet>{items}"
               "</instancesSet></item>")
INSTANCE = "<item><instanceId>i-{n}</instanceId><instanceType>p3.2xlarge</instanceType>{extra}</item>"


def instances_answer(count, extra=""):
    """`count` reservations of one instance each."""
    reservations = "".join(RESERVATION.format(items=INSTANCE.format(n=n, extra=extra)) for n in range(count))
    return ('<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>x</requestId>'
            f"<reservationSet>{reservations}</reservationSet></DescribeInstancesResponse>")


CE_TAGS = ("ce", "AWSInsightsIndexService.TagResource", "1.1")
CE_ARN = "arn:aws:ce::123456789012:anomalymonitor/0b1c2d3e"


def cases():
    """(name, exchange, a text some mismatch must contain, or None when none may be found)."""
    with_key = dict(USAGE, granularity="DAILY")
    weekly = dict(USAGE, Granularity="WEEKLY")
    three = dict(USAGE, GroupBy=USAGE["GroupBy"] + [{"Type": "DIMENSION", "Key": "SERVICE"}])
    bad_key = dict(USAGE, GroupBy=[{"Type": "DIMENSION", "Key": "PROJECT"}])
    metric = {
        "MetricDataQueries": [{"Id": "q1", "MetricStat": {"Metric": {"Namespace": "AWS/SageMaker",
                              "MetricName": "Invocations"}, "Period": 60, "Stat": "Sum"}}],
        "StartTime": 1795000000.0, "EndTime": 1795003600.0,
    }
    odd_period = json.loads(json.dumps(metric))
    odd_period["MetricDataQueries"][0]["MetricStat"]["Period"] = 90
    # Signed 2026-11-28; StartTime 20 days before that day began: minutes are no longer kept.
    old_minutes = json.loads(json.dumps(metric))
    old_minutes["StartTime"] = 1795824000.0 - 20 * 86400
    old_minutes["EndTime"] = 1795824000.0
    recent_minutes = json.loads(json.dumps(old_minutes))
    recent_minutes["StartTime"] = 1795824000.0 - 14 * 86400
    return [
        ("a correct GetCostAndUsage", json_exchange(*CE, USAGE, USAGE_ANSWER), None),
        ("a member in the wrong case", json_exchange(*CE, with_key, USAGE_ANSWER), "no member 'granularity'"),
        ("a value outside the enum", json_exchange(*CE, weekly, USAGE_ANSWER), "not in the enum"),
        ("three GroupBy (documented: at most two)", json_exchange(*CE, three, USAGE_ANSWER), "at most 2"),
        ("a GroupBy dimension AWS does not take", json_exchange(*CE, bad_key, USAGE_ANSWER), "PROJECT"),
        ("an answer missing a required member",
         json_exchange("budgets", "AWSBudgetServiceGateway.DescribeBudgets", "1.1", {"AccountId": "123456789012"},
                       {"Budgets": [{"TimeUnit": "MONTHLY", "BudgetType": "COST"}]}),
         "required member 'BudgetName'"),
        ("a null member (AWS omits what it has not)",
         json_exchange("budgets", "AWSBudgetServiceGateway.DescribeNotificationsForBudget", "1.1",
                       {"AccountId": "123456789012", "BudgetName": "b"}, {"Notifications": [], "NextToken": None}),
         "null for member 'NextToken'"),
        ("a name the model's pattern refuses (a budget name may not hold ':')",
         json_exchange("budgets", "AWSBudgetServiceGateway.DescribeBudget", "1.1",
                       {"AccountId": "123456789012", "BudgetName": "team:ml"},
                       {"__type": "NotFoundException", "Message": "no such budget"}, status=400),
         "does not match the pattern"),
        ("a tag key outside a Unicode class (\\p{L}: the regex module reads it)",
         json_exchange(*CE_TAGS, {"ResourceArn": CE_ARN, "ResourceTags": [{"Key": "<b>", "Value": "x"}]}, {}),
         "does not match the pattern"),
        ("a tag key of letters in any script",
         json_exchange(*CE_TAGS, {"ResourceArn": CE_ARN, "ResourceTags": [{"Key": "équipe", "Value": "x"}]}, {}),
         None),
        ("an undeclared error",
         json_exchange("sagemaker", "SageMaker.DescribeTrainingJob", "1.1", {"TrainingJobName": "j"},
                       {"__type": "NoSuchJob", "message": "x"}, status=400),
         "error 'NoSuchJob'"),
        ("SageMaker's documented answer for an unknown job",
         json_exchange("sagemaker", "SageMaker.DescribeTrainingJob", "1.1", {"TrainingJobName": "j"},
                       {"__type": "ValidationException", "message": "Requested resource not found."}, status=400),
         None),
        ("a correct DescribeInstances page", ec2_exchange(INSTANCES.format(limit=5), instances_answer(2)), None),
        ("a filter sent under the member's own name",
         ec2_exchange(INSTANCES.format(limit=5).replace("Filter.1", "Filters.1"), instances_answer(1)),
         "no member sent as 'Filters'"),
        ("a page longer than its limit", ec2_exchange(INSTANCES.format(limit=5), instances_answer(6)),
         "6 items in Reservations"),
        ("another operation's answer",
         ec2_exchange(INSTANCES.format(limit=5), instances_answer(1).replace("DescribeInstancesResponse", "StopInstancesResponse")),
         "not <DescribeInstancesResponse>"),
        ("an answer element the model lacks",
         ec2_exchange(INSTANCES.format(limit=5), instances_answer(1, "<instanceStatus>ok</instanceStatus>")),
         "no member answered as <instanceStatus>"),
        ("Savings Plans coverage with both Granularity and GroupBy (documented: not both)",
         json_exchange("ce", "AWSInsightsIndexService.GetSavingsPlansCoverage", "1.1",
                       {"TimePeriod": {"Start": "2026-10-01", "End": "2026-10-31"}, "Granularity": "MONTHLY",
                        "GroupBy": [{"Type": "DIMENSION", "Key": "INSTANCE_FAMILY"}]},
                       {"SavingsPlansCoverages": []}),
         "no Granularity with GroupBy"),
        ("a tagging answer outside its TagFilter (a fake that ignores the filter)",
         json_exchange("tagging", "ResourceGroupsTaggingAPI_20170126.GetResources", "1.1",
                       {"TagFilters": [{"Key": "project", "Values": ["vision"]}], "ResourcesPerPage": 100},
                       {"ResourceTagMappingList": [{"ResourceARN": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/x",
                                                    "Tags": [{"Key": "project", "Value": "vision*"}]}]}),
         "outside the TagFilter"),
        ("MaxResults beside InstanceIds (documented: not in one request)",
         ec2_exchange("Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-1&MaxResults=5", instances_answer(1)),
         "MaxResults with InstanceIds"),
        ("a correct GetMetricData in CBOR", cbor_exchange("GetMetricData", metric, {"MetricDataResults": []}), None),
        ("a CBOR member the model lacks",
         cbor_exchange("GetMetricData", dict(metric, Dimensions=[]), {"MetricDataResults": []}),
         "no member 'Dimensions'"),
        ("a period CloudWatch does not take", cbor_exchange("GetMetricData", odd_period, {"MetricDataResults": []}),
         "Period 90"),
        ("one-minute points asked of 20 days ago (documented: none kept)",
         cbor_exchange("GetMetricData", old_minutes, {"MetricDataResults": []}), "over 15 days old"),
        ("one-minute points of the last 14 days", cbor_exchange("GetMetricData", recent_minutes,
                                                                {"MetricDataResults": []}), None),
    ]


def run(check, exchange):
    failed = 0
    for name, record, expect in cases():
        found = [key for key, _ in check(exchange(record))]
        ok = (not found) if expect is None else any(expect in key for key in found)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": found {found}, wanted {expect or 'none'}"))
    print(f"aws-contract self-test: {len(cases()) - failed} of {len(cases())} as expected")
    return 1 if failed else 0
