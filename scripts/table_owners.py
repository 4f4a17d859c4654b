"""Table owners, for scripts/check-layers.py (docs/ARCHITECTURE.md, "Tables and their owners").

Every table a migration creates (and none drops) has one owning module. The check fails when

- a table has no owner (or an owner names a table no migration creates);
- a module other than the owner writes a table (INSERT INTO, UPDATE, DELETE FROM, TRUNCATE);
- a feature reads a table whose owner is a feature of a higher tier, or a primitive reads a
  feature's table;

except the pairs WRITES_ALSO and READS_ALSO list, each with its reason. SQL is found in the
source text as written (strings included, comments not); a table named in a format string
(`{table}`) is not seen, so the grains' generic statements stay with `costs`, which builds them.
No network; stdlib only.
"""
import os
import re

# table -> the module that owns it: the one place its rows are written.
OWNERS = {
    # Sign-in accounts, sessions, tokens.
    "accounts": "auth", "sessions": "auth", "api_tokens": "auth", "sign_in_attempts": "auth",
    # The email outbox.
    "alert_deliveries": "outbox",
    # Facts, daily totals and what they name.
    "costs_by_user": "costs", "costs_by_usage_type": "costs", "costs_by_service": "costs",
    "costs_by_record_type": "costs", "costs_by_user_credit": "costs", "costs_by_user_refund": "costs",
    "costs_by_user_tax": "costs", "costs_by_user_gpu": "costs", "costs_by_account": "costs",
    "costs_by_account_record_type": "costs", "daily_project_costs": "costs", "settlement": "costs",
    "usage_types": "costs", "aws_accounts": "costs", "projects": "costs", "tagged_users": "costs",
    # The organisation's teams, owners and account mappings.
    "teams": "teams", "team_owners": "teams", "team_accounts": "teams",
    # The allocation and the page rollups.
    "allocated_daily_costs": "allocation", "allocated_project_spans": "allocation",
    "allocation_rules": "allocation", "allocation_rule_teams": "allocation",
    "owned_spend_spans": "allocation", "record_type_days": "allocation", "team_daily_costs": "allocation",
    "team_account_daily_costs": "allocation",
    "budgets": "budgets", "budget_thresholds": "budgets", "budget_alerts": "budgets", "budget_aws_sync": "budgets",
    "enforcement_policies": "enforcement", "enforcement_actions": "enforcement", "enforcement_audit": "enforcement",
    "enforcement_resources": "enforcement", "violations": "enforcement", "approvals": "enforcement",
    "approval_requests": "enforcement", "approval_notices": "enforcement",
    "savings_decisions": "savings", "savings_digests": "savings", "idle_alerts": "savings",
    "idle_snoozes": "savings", "pricing_settings": "savings", "commitment_coverage": "savings",
    "commitment_reads": "savings", "commitment_use": "savings", "aws_savings_plan_recommendations": "savings",
    "ingestion_runs": "ingestion", "ingested_days": "ingestion",
    "statements": "statements",
    "audit_log": "audit_log",
    # Written by the tables' triggers; read through page_data.
    "data_changes": "page_data",
}

# Debt, each pair with why it stands: (module, table) -> reason.
_ORG = "the organisation's tables move to a tier-1 org module (ARCHITECTURE's numbering) that owns their reads and writes (#55 part 3)"
_OUTBOX = "the outbox writes its senders' delivery state; one content table through outbox::enqueue is #55 part 3"
# Modules that may write any table, with why.
WRITES_ANY = {"demo": "the demo clears every table and seeds a made-up organisation in one transaction"}
WRITES_ALSO = {
    ("teams", "projects"): _ORG, ("teams", "tagged_users"): _ORG,
    ("savings", "projects"): "a project's declared workload and model are kept on its row; " + _ORG,
    ("budgets", "alert_deliveries"): _OUTBOX, ("enforcement", "alert_deliveries"): _OUTBOX,
    ("savings", "alert_deliveries"): _OUTBOX, ("outbox", "budget_alerts"): _OUTBOX,
    ("outbox", "enforcement_actions"): _OUTBOX, ("outbox", "enforcement_audit"): _OUTBOX,
}
READS_ALSO = {
    **{
        pair: _ORG
        for pair in [
            ("auth", "teams"), ("auth", "team_owners"), ("costs", "teams"),
            ("allocation", "teams"), ("allocation", "team_accounts"),
            ("budgets", "teams"), ("budgets", "team_owners"), ("budgets", "team_accounts"),
            ("enforcement", "teams"), ("enforcement", "team_owners"),
            ("savings", "teams"), ("savings", "team_owners"),
        ]
    },
    **{
        ("outbox", table): "the outbox joins its senders' rows to say what a delivery is about; " + _OUTBOX
        for table in ("budget_alerts", "enforcement_actions", "violations", "approval_notices", "idle_alerts",
                      "savings_digests")
    },
    ("costs", "ingested_days"): "settlement is judged from the days ingestion fetched; the table moves to costs (#55 part 3)",
}

_WRITE = re.compile(r"\b(?:insert\s+into|update|delete\s+from|truncate(?:\s+table)?)\s+([a-z_]+(?:\s*,\s*[a-z_]+)*)", re.I)
_READ = re.compile(r"\b(?:from|join)\s+([a-z_]+)", re.I)


def migration_tables(migrations):
    """The tables the migrations leave: created and not dropped, in file order."""
    tables = set()
    for name in sorted(os.listdir(migrations)):
        if not name.endswith(".sql"):
            continue
        with open(os.path.join(migrations, name), encoding="utf-8") as f:
            text = re.sub(r"--[^\n]*", "", f.read())
        for m in re.finditer(r"\b(create|drop)\s+table\s+(?:if\s+(?:not\s+)?exists\s+)?([a-z_]+)", text, re.I):
            (tables.add if m.group(1).lower() == "create" else tables.discard)(m.group(2))
    return tables


def _without_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def problems(files, module_of, tier_of, primitives, migrations):
    """`files`: src-relative path -> text; `module_of(path)`: its top-level module."""
    tables = migration_tables(migrations)
    found, used = [], set()
    for table in sorted(tables - set(OWNERS)):
        found.append(f"table {table} has no owner (add it to OWNERS in scripts/table_owners.py)")
    for table in sorted(set(OWNERS) - tables):
        found.append(f"OWNERS names {table}, which no migration creates")
    for rel, text in sorted(files.items()):
        module = module_of(rel)
        code = _without_comments(text)
        for m in _WRITE.finditer(code):
            for table in re.split(r"\s*,\s*", m.group(1)):
                owner = OWNERS.get(table)
                if table not in tables or not owner or owner == module or module in WRITES_ANY:
                    continue
                if (module, table) in WRITES_ALSO:
                    used.add(("write", module, table))
                else:
                    found.append(f"{rel}: writes {table}, which {owner} owns")
        for m in _READ.finditer(code):
            table = m.group(1)
            owner = OWNERS.get(table)
            if table not in tables or not owner or owner == module:
                continue
            below = module in tier_of and owner in tier_of and tier_of[owner] > tier_of[module]
            if (module, table) in READS_ALSO and (below or module in primitives):
                used.add(("read", module, table))
            elif module in primitives and owner not in primitives:
                found.append(f"{rel}: reads {table}, a table of {owner} (a primitive reads no feature's table)")
            elif below:
                found.append(f"{rel}: reads {table}, a table of {owner}, which is in a higher tier than {module}")
    # A listed pair the code no longer has is a reason that no longer holds: drop it. (The
    # self-test's made-up trees turn this off, but in the case that tests it.)
    stale_checked = os.environ.get("CHECK_LAYERS_STALE_PAIRS", "1") == "1"
    checked = (("write", WRITES_ALSO), ("read", READS_ALSO)) if stale_checked else ()
    for kind, listed in checked:
        for module, table in sorted(listed):
            if (kind, module, table) not in used and any(module_of(rel) == module for rel in files):
                found.append(f"table_owners.py lists {module} {kind}s {table}, which it no longer does: remove the pair")
    return sorted(set(found))
