#!/usr/bin/env python3
"""The layering check (docs/ARCHITECTURE.md, "Layers"): fails when

- `crate::server`, `crate::app`, `crate::jobs` or `crate::cli` is imported outside the
  composition files (lib.rs, main.rs, cli/, server.rs, jobs.rs, app.rs);
- a file in src/ui/ or src/core/ imports a feature or anything above it;
- the src/ import graph has a cycle (strongly connected component) of more than 3 files,
  with the mod.rs <-> child links ignored.

It reads `crate::` and `super::` paths, in `use` trees and inline. No network; stdlib only.
Run: scripts/check-layers.py [--report] (prints the graph's largest components).
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MAX_CYCLE = 3
MAX_LINES = 450
COMPOSITION_ROOTS = {"server", "app", "jobs", "cli"}
# Files allowed to import the composition roots: the roots themselves and the entry points.
COMPOSITION_FILES = ("lib.rs", "main.rs", "server.rs", "jobs.rs", "app.rs", "cli/", "server/")
# Low layers that may import nothing above themselves.
LOW_LAYERS = ("ui/", "core/")


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


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def strip_strings(text):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


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


def referenced_paths(text):
    text = strip_strings(strip_comments(text))
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super)\b[^;]*);", text, flags=re.S):
        paths.extend(expand_use_tree(re.sub(r"\s+", " ", m.group(1))))
    without_uses = re.sub(r"\buse\s+(?:crate|super)\b[^;]*;", "", text, flags=re.S)
    for m in re.finditer(r"\b((?:crate|super)(?:::(?:super|\w+))+)", without_uses):
        paths.append(m.group(1))
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
        for path in referenced_paths(text):
            target = resolve(path, here[rel], modules)
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


def main():
    report = "--report" in sys.argv
    files, edges, raw, here = build_graph()
    problems = []

    for rel, refs in raw.items():
        composition = rel.startswith(COMPOSITION_FILES)
        for path, target in refs:
            top = here[target][0] if here[target] else ""
            if top in COMPOSITION_ROOTS and not composition:
                problems.append(f"{rel}: imports {path} (only composition files may)")
            if rel.startswith(LOW_LAYERS) and not target.startswith(LOW_LAYERS) and target != "error.rs":
                problems.append(f"{rel}: imports {path} ({target} is above src/{rel.split('/')[0]}/)")

    graph = {
        a: {b for b in bs if not is_parent_child(a, b, here)} for a, bs in edges.items()
    }
    comps = sorted(components(graph), key=len, reverse=True)
    largest = comps[0] if comps else []
    if len(largest) > MAX_CYCLE:
        problems.append(
            f"import cycle of {len(largest)} files (at most {MAX_CYCLE}): " + ", ".join(largest)
        )

    for rel, text in files.items():
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_LINES})")

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
