#!/usr/bin/env python3
"""Checks the relative links of README.md, CONTRIBUTING.md and docs/*.md: every target file
exists, and every `#anchor` names a heading of its target (GitHub's slugs: lowercase,
punctuation other than hyphens and underscores dropped, each space a hyphen, a repeated
heading suffixed -1, -2, …). Links into fenced code blocks and inline code are not links.
Exit 1, naming each broken link by file and line; 0 when all hold.

    python3 scripts/check-doc-links.py
"""
import glob
import os
import re
import sys
import unicodedata
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
# [text](target) and ![alt](target); the target ends at whitespace or the closing bracket.
LINK = re.compile(r'!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
CODE_SPAN = re.compile(r'(`+)(.+?)\1')


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fenced = False
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line.rstrip('\n')


def slug(heading):
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)  # a link's text stays
    text = re.sub(r'<[^>]+>', '', text)  # inline HTML goes
    text = text.strip().lower()
    kept = []
    for ch in text:
        if ch in ' -_' or unicodedata.category(ch)[0] in 'LNM':
            kept.append(ch)
    return ''.join(kept).replace(' ', '-')


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f'{base}-{n}')
            for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                found.add(a)
        _anchors[path] = found
    return _anchors[path]


def links(path):
    for number, line in prose_lines(path):
        bare = CODE_SPAN.sub('', line)
        for m in LINK.finditer(bare):
            yield number, m.group(1)
        m = REFDEF.match(bare)
        if m:
            yield number, m.group(1)


def check(path):
    problems = []
    for number, target in links(path):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I) or target.startswith('//'):
            continue  # http:, https:, mailto: …: not ours to check
        file_part, _, anchor = target.partition('#')
        file_part = unquote(file_part)
        if file_part:
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        else:
            dest = path
        where = f'{os.path.relpath(path, ROOT)}:{number}'
        if not os.path.exists(dest):
            problems.append(f'{where}: {target}: no such file {os.path.relpath(dest, ROOT)}')
            continue
        if anchor:
            if not dest.endswith('.md') or os.path.isdir(dest):
                problems.append(f'{where}: {target}: an anchor into a file that is not Markdown')
            elif unquote(anchor) not in anchors(dest):
                problems.append(f'{where}: {target}: no heading #{anchor} in {os.path.relpath(dest, ROOT)}')
    return problems


def main():
    files = [os.path.join(ROOT, 'README.md'), os.path.join(ROOT, 'CONTRIBUTING.md')]
    files += sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md')))
    problems = []
    count = 0
    for path in files:
        if os.path.exists(path):
            count += sum(1 for _ in links(path))
            problems += check(path)
    for p in problems:
        print(p)
    print(f'check-doc-links: {len(files)} files, {count} links, {len(problems)} broken')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
