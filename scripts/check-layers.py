#!/usr/bin/env python3
"""The layering check (docs/ARCHITECTURE.md, "Tiers"): fails when

- `crate::server`, `crate::app`, `crate::jobs`, `crate::cli` or `crate::page_cache` is imported outside the
  composition files (lib.rs, main.rs, cli/, server.rs, jobs.rs, app.rs);
- a primitive (PRIMITIVES) imports anything but primitives, or src/ui/ imports a feature;
- a feature imports a feature of a higher tier (TIERS), or one of its own tier that
  SAME_TIER does not list with a reason; or a top-level module has no tier;
- top-level modules import each other in a loop;
- a `#[server]` function does not ask who is calling (caller() or require_admin()), unless
  it is one of the public ones sign-in and setup need;
- the src/ import graph has any cycle (strongly connected component of more than one
  file), with the mod.rs <-> child links ignored;
- a file has more than MAX_LINES lines of code (comments, blank lines and its
  `#[cfg(test)] mod tests` not counted);
- a table has no owner, is written outside its owner, or is read from below its owner's
  tier, beyond the pairs listed with a reason (scripts/table_owners.py).

It reads `crate::` and `super::` paths, in `use` trees and inline. No network; stdlib only.
Run: scripts/check-layers.py [--report] (prints the graph's largest components).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import table_owners  # noqa: E402  (beside this file)

SRC = os.environ.get("CHECK_LAYERS_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MIGRATIONS = os.environ.get("CHECK_LAYERS_MIGRATIONS") or os.path.join(SRC, "..", "migrations")
MAX_CYCLE = 1
MAX_LINES = 450
COMPOSITION_ROOTS = {"server", "app", "jobs", "cli", "page_cache"}
COMPOSITION_FILES = ("lib.rs", "main.rs", "server.rs", "jobs.rs", "app.rs", "cli/", "server/", "page_cache/")
PRIMITIVES = {
    "error", "format", "period", "codec", "config", "db", "ctx", "csp", "client_address",
    "mail", "page_data", "charts", "audit_log", "aws", "catalogue", "usage_type",
}
UI = "ui"
# Features by tier, lowest first. A feature may import any feature of a lower tier; one of
# its own tier only where SAME_TIER lists the pair with its reason.
TIERS = [
    ["auth", "outbox"],
    ["costs", "audit"],
    ["allocation", "budgets", "enforcement", "savings"],
    ["ingestion", "statements", "teams", "dashboard", "preflight", "metrics", "anomalies"],
    ["as_code", "demo", "api", "doctor"],
]
SAME_TIER = {
    # ("importer", "imported"): "why",
}
TIER_OF = {feature: n for n, tier in enumerate(TIERS) for feature in tier}
FEATURES = [feature for tier in TIERS for feature in tier]
PUBLIC_SERVER_FNS = {"me", "login", "setup_needed", "setup_token_required", "setup"}
# What counts as asking: the auth checks, or the dashboard's request (which calls caller()).
CALLER_CHECKS = ("caller()", "require_admin()", "CostRequest::new(")


def rust_files():
    for root, _dirs, files in os.walk(SRC):
        for name in files:
            if name.endswith(".rs"):
                yield os.path.relpath(os.path.join(root, name), SRC)


def module_path(rel):
    """src-relative file -> module path list (lib.rs -> [])."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def strip_comments_and_strings(text):
    """Source with comments removed and string and char literals emptied, so only code
    is searched for paths. Handles nested block comments and raw strings."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            stop = n if end < 0 else end + 1 + len(hashes)
            # Emptied, but its lines kept: a multi-line SQL string is lines of code.
            out.append('""' + '\n""' * text.count("\n", i, stop))
            i = stop
        elif c == '"':
            start = i
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""' + '\n""' * text.count("\n", start, i))
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", text[i:]).group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(text):
    """Lines of code: comments, blank lines and an inline `#[cfg(test)] mod tests { … }`
    left out; a string literal counts with all its lines."""
    code = strip_comments_and_strings(text)
    for start, end, name in sorted(inline_modules_at(code), reverse=True):
        if name == "tests" and code[:start].rstrip().endswith("#[cfg(test)]"):
            code = code[:start] + code[end:]
    return sum(1 for line in code.splitlines() if line.strip())


def expand_use_tree(tree):
    """'a::{b, c::{d, e}}' -> ['a::b', 'a::c::d', 'a::c::e']"""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{" and depth == 0:
            prefix = tree[:i].rstrip(":").strip()
            inner = tree[i + 1 : tree.rindex("}")]
            items, buf, d = [], "", 0
            for c in inner:
                if c == "," and d == 0:
                    items.append(buf)
                    buf = ""
                    continue
                d += c == "{"
                d -= c == "}"
                buf += c
            items.append(buf)
            out = []
            for item in items:
                if item.strip():
                    for sub in expand_use_tree(item):
                        out.append(prefix + "::" + sub if prefix else sub)
            return out
    return [tree.split(" as ")[0].strip()]


def inline_modules_at(text):
    """For each offset, the inline modules (`mod tests { … }`) it sits in, as a list of
    (start, end, name) spans."""
    spans, stack, depth = [], [], 0
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{|\{|\}", text):
        if m.group(1):
            depth += 1
            stack.append((m.start(), depth, m.group(1)))
        elif m.group(0) == "{":
            depth += 1
        else:
            if stack and stack[-1][1] == depth:
                start, _, name = stack.pop()
                spans.append((start, m.end(), name))
            depth -= 1
    return spans


def referenced_paths(text):
    """(path, inline module names around it) for every crate:: or super:: path in code."""
    text = strip_comments_and_strings(text)
    spans = inline_modules_at(text)

    def inside(pos):
        return [name for start, end, name in sorted(spans) if start <= pos < end]

    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super)\b[^;]*);", text, flags=re.S):
        for p in expand_use_tree(re.sub(r"\s+", " ", m.group(1))):
            paths.append((p, inside(m.start())))
    uses = [(m.start(), m.end()) for m in re.finditer(r"\buse\s+(?:crate|super)\b[^;]*;", text, flags=re.S)]
    for m in re.finditer(r"\b((?:crate|super)(?:::(?:super|\w+))+)", text):
        if not any(a <= m.start() < b for a, b in uses):
            paths.append((m.group(1), inside(m.start())))
    return paths


def resolve(path, here, modules):
    """A path like crate::a::b::C or super::x -> the module file it lands in."""
    parts = [p.strip() for p in path.split("::") if p.strip()]
    if parts[0] == "crate":
        base, parts = [], parts[1:]
    else:
        base = list(here)
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
    full = base + [p for p in parts if p not in ("self", "*")]
    for n in range(len(full), -1, -1):
        if tuple(full[:n]) in modules:
            return modules[tuple(full[:n])]
    return None


def build_graph():
    modules, files = {}, {}
    for rel in rust_files():
        if rel == "main.rs":
            continue
        mp = tuple(module_path(rel))
        modules[mp] = rel
        with open(os.path.join(SRC, rel), encoding="utf-8") as f:
            files[rel] = f.read()
    # A file's own module path, for super:: (mod.rs is its directory's module).
    here = {rel: module_path(rel) for rel in files}
    edges = {rel: set() for rel in files}
    raw = {rel: [] for rel in files}
    for rel, text in files.items():
        for path, inline in referenced_paths(text):
            target = resolve(path, here[rel] + inline, modules)
            if target and target != rel:
                edges[rel].add(target)
                raw[rel].append((path, target))
    return files, edges, raw, here


def is_parent_child(a, b, here):
    """mod.rs <-> its direct child, or lib.rs <-> a top-level module file."""
    ma, mb = here[a], here[b]
    return (len(mb) == len(ma) + 1 and mb[: len(ma)] == ma) or (
        len(ma) == len(mb) + 1 and ma[: len(mb)] == mb
    )


def components(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def self_test():
    """Runs the check on small made-up trees: each must fail for its reason, and a clean
    one must pass. Proves the check can fail."""
    import subprocess
    import tempfile

    # Each case: the tree, and a piece of the message it must fail with (None: it passes).
    cases = {
        "cycle": ({"lib.rs": "", "costs/mod.rs": "", "costs/a.rs": "use super::b::X;", "costs/b.rs": "use super::c::Y;",
                   "costs/c.rs": "use super::d::Z;", "costs/d.rs": "fn f() { super::a::g(); }"}, "import cycle of 4 files"),
        "ui imports a feature": ({"lib.rs": "", "ui/mod.rs": "", "ui/page.rs": "use crate::budgets::Budget;",
                                  "budgets/mod.rs": ""}, "budgets is above ui"),
        "feature imports the server": ({"lib.rs": "", "costs/mod.rs": "use crate::server::AppState;", "server.rs": ""},
                                       "only composition files may"),
        "primitive imports a feature": ({"lib.rs": "", "period.rs": "use crate::{costs::X};", "costs/mod.rs": ""},
                                        "costs is above period"),
        "long file": ({"lib.rs": "", "costs/mod.rs": "", "costs/big.rs": "x\n" * MAX_LINES + "x"},
                      f"{MAX_LINES + 1} lines of code"),
        "long string": ({"lib.rs": "", "costs/mod.rs": "const S: &str = \"" + "x\n" * MAX_LINES + "\";"},
                        f"{MAX_LINES + 1} lines of code"),
        "feature imports a feature above it": ({"lib.rs": "", "costs/mod.rs": "use crate::dashboard::Page;",
                                                "dashboard/mod.rs": ""}, "higher tier"),
        "feature imports one of its own tier": ({"lib.rs": "", "budgets/mod.rs": "use crate::savings::Kind;",
                                                 "savings/mod.rs": ""}, "own tier"),
        "two files import each other": ({"lib.rs": "", "costs/mod.rs": "", "costs/a.rs": "use super::b::X;",
                                         "costs/b.rs": "use super::a::Y;"}, "import cycle of 2 files"),
        "module without a tier": ({"lib.rs": "", "gadgets/mod.rs": ""}, "has no tier"),
        "feature imports the app": ({"lib.rs": "", "budgets/pages.rs": "use crate::app::Shell;", "app.rs": "",
                                     "budgets/mod.rs": ""}, "only composition files may"),
        "modules in a loop through a re-export": ({"lib.rs": "", "format/mod.rs": "pub use x::X;",
                                                   "format/x.rs": "use crate::period::Y;",
                                                   "period.rs": "use crate::format::X;"}, "in a loop"),
        "feature calls a job": ({"lib.rs": "", "ingestion/mod.rs": "fn f() { crate::jobs::after(); }", "jobs.rs": ""},
                                "only composition files may"),
        "unchecked server function": ({"lib.rs": "", "teams/mod.rs": "", "teams/server_fns.rs":
                                       '#[server(prefix = "/api", endpoint = "x")]\npub async fn x() -> R {\n    Ok(1)\n}\n'},
                                      "does not check the caller"),
        "a write from the wrong module": ({"lib.rs": "", "costs/mod.rs":
                                           'const Q: &str = "insert into budgets (name) values ($1)";'},
                                          "writes budgets, which budgets owns"),
        "a truncate from the wrong module": ({"lib.rs": "", "savings/mod.rs":
                                              'const Q: &str = "truncate idle_alerts, teams";'},
                                             "writes teams, which teams owns"),
        "a read from below the owner's tier": ({"lib.rs": "", "costs/mod.rs":
                                                 'const Q: &str = "select count(*) from savings_decisions";'},
                                                "a table of savings, which is in a higher tier than costs"),
        "a primitive reads a feature's table": ({"lib.rs": "", "period.rs":
                                                  'const Q: &str = "select 1 from budgets b join teams t on true";'},
                                                 "a primitive reads no feature's table"),
        "a table without an owner": ({"lib.rs": "", "__migration__": "create table gadgets (id int);"},
                                     "table gadgets has no owner"),
        "a listed pair the code no longer has": ({"lib.rs": "", "outbox.rs": "", "__stale__": ""},
                                                 "which it no longer does"),
        "clean": ({"lib.rs": "", "ui/mod.rs": "use crate::format::usd;", "format/mod.rs": "",
                   "costs/mod.rs": "use crate::ui::x; // use crate::server::Y;\nconst S: &str = \"crate::app::Z\";",
                   "server.rs": "use crate::costs::Q;", "app.rs": "", "period.rs": "mod tests { use super::*; }",
                   "dashboard/mod.rs": "use crate::costs::Q;",
                   "format/notes.rs": "// a line of prose\n" * (MAX_LINES + 10) + "fn f() {}\n#[cfg(test)]\nmod tests {\n"
                   + "    fn t() {}\n" * (MAX_LINES + 10) + "}\n",
                   "teams/server_fns.rs": '#[server(prefix = "/api", endpoint = "x")]\npub async fn x() -> R {\n    crate::auth::require_admin()?;\n}\n',
                   "auth/server_fns.rs": '#[server(prefix = "/api", endpoint = "login")]\npub async fn login() -> R {\n    Ok(())\n}\n',
                   "budgets/store.rs": '// insert into teams is not code\nconst Q: &str = "update budgets set amount = 1; select * from projects p join allocated_daily_costs a on true";',
                   "enforcement/store.rs": 'const Q: &str = "select * from teams";',
                   "demo/mod.rs": 'const Q: &str = "truncate budgets, teams, costs_by_user";'},
                  None),
    }
    failed = False
    for name, (tree, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as migrations:
            tree = dict(tree)
            # Every owned table exists, plus what the case adds; a listed pair the made-up tree
            # lacks is checked only where the case asks.
            created = "".join(f"create table {t} (id int);\n" for t in table_owners.OWNERS)
            with open(os.path.join(migrations, "1_tables.sql"), "w", encoding="utf-8") as f:
                f.write(created + tree.pop("__migration__", ""))
            stale = "__stale__" in tree
            tree.pop("__stale__", None)
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            env = dict(os.environ, CHECK_LAYERS_SRC=root, CHECK_LAYERS_MIGRATIONS=migrations,
                       CHECK_LAYERS_STALE_PAIRS="1" if stale else "0")
            run = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True)
            if expected is None and run.returncode != 0:
                print(f"self-test: {name!r} should pass: {run.stderr.strip()}", file=sys.stderr)
                failed = True
            elif expected is not None and (run.returncode == 0 or expected not in run.stderr):
                print(f"self-test: {name!r} should fail with {expected!r}: {run.stderr.strip()}", file=sys.stderr)
                failed = True
    if failed:
        sys.exit(1)
    print(f"layering self-test: ok ({len(cases)} cases)")


def main():
    if "--self-test" in sys.argv:
        return self_test()
    report = "--report" in sys.argv
    files, edges, raw, here = build_graph()
    problems = []

    for rel, refs in raw.items():
        composition = rel.startswith(COMPOSITION_FILES)
        for path, target in refs:
            top = here[target][0] if here[target] else ""
            if top in COMPOSITION_ROOTS and not composition:
                problems.append(f"{rel}: imports {path} (only composition files may)")
            here_top = here[rel][0] if here[rel] else ""
            if here_top in TIER_OF and top in TIER_OF and here_top != top:
                if TIER_OF[top] > TIER_OF[here_top]:
                    problems.append(f"{rel}: imports {path} ({top} is in a higher tier than {here_top})")
                elif TIER_OF[top] == TIER_OF[here_top] and (here_top, top) not in SAME_TIER:
                    problems.append(f"{rel}: imports {path} ({top} is in {here_top}'s own tier, and SAME_TIER does not list the pair)")
            allowed = PRIMITIVES | ({UI} if here_top == UI else set())
            if (here_top in PRIMITIVES or here_top == UI) and top not in allowed:
                problems.append(f"{rel}: imports {path} ({top} is above {here_top})")

    graph = {
        a: {b for b in bs if not is_parent_child(a, b, here)} for a, bs in edges.items()
    }
    comps = sorted(components(graph), key=len, reverse=True)
    largest = comps[0] if comps else []
    if len(largest) > MAX_CYCLE:
        problems.append(
            f"import cycle of {len(largest)} files (at most {MAX_CYCLE}): " + ", ".join(largest)
        )

    # Top-level modules (features, primitives, ui, composition) form no cycle either: this
    # also catches a loop that a file-level view would miss through a mod.rs re-export.
    tops = {}
    for rel, refs in raw.items():
        here_top = here[rel][0] if here[rel] else ""
        for _path, target in refs:
            target_top = here[target][0] if here[target] else ""
            if here_top and target_top and here_top != target_top:
                tops.setdefault(here_top, set()).add(target_top)
    nodes = set(tops) | {t for ts in tops.values() for t in ts}
    for comp in components({n: tops.get(n, set()) for n in nodes}):
        if len(comp) > 1:
            problems.append("modules import each other in a loop: " + " -> ".join(comp))

    for rel, text in files.items():
        for m in re.finditer(r'#\[server\(([^)]*)\)\]\s*pub async fn (\w+)', text):
            endpoint = re.search(r'endpoint\s*=\s*"([^"]+)"', m.group(1))
            name = endpoint.group(1) if endpoint else m.group(2)
            # The function's body: up to the next item at the start of a line.
            rest = text[m.end():]
            end = re.search(r"\n\}\n", rest)
            body = rest[: end.end() if end else len(rest)]
            if name not in PUBLIC_SERVER_FNS and not any(check in body for check in CALLER_CHECKS):
                problems.append(f"{rel}: server function {m.group(2)} ({name}) does not check the caller")
        lines = code_lines(text)
        if lines > MAX_LINES:
            problems.append(f"{rel}: {lines} lines of code (at most {MAX_LINES})")

    problems += table_owners.problems(
        files, lambda rel: here[rel][0] if here[rel] else "", TIER_OF, PRIMITIVES, MIGRATIONS
    )

    known = set(FEATURES) | PRIMITIVES | {UI} | COMPOSITION_ROOTS | {"main", "lib", ""}
    for rel in files:
        top = here[rel][0] if here[rel] else ""
        if top not in known:
            problems.append(f"{rel}: module {top} has no tier (add it to TIERS or PRIMITIVES)")

    if report:
        print(f"{len(files)} files; largest cycles:")
        for comp in comps[:5]:
            if len(comp) > 1:
                print(f"  {len(comp)}: {' '.join(comp)}")
    for p in problems:
        print("layering:", p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"layering: ok ({len(files)} files, largest cycle {len(largest)})")


if __name__ == "__main__":
    main()
