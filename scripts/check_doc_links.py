#!/usr/bin/python3
"""Checks every relative link in the repository's Markdown files.

Usage: scripts/check_doc_links.py [ROOT]   (ROOT: the repository; default: this script's parent)

For each `[text](target)` and `![alt](target)` outside code, where target is not a URL: the file
or folder must exist relative to the Markdown file, and a `#anchor` on a Markdown target must name
one of its headings (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens); and
every page in docs/guide/ must be linked from README.md (its feature table).
Prints one line per broken link and exits 1 if there is any, 0 otherwise. Standard library only.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SKIP_DIRS = {".git", "shared", "node_modules"}


def markdown_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "*.md"],
                             capture_output=True, text=True, check=True).stdout
        return sorted(os.path.join(root, p) for p in out.splitlines() if p)
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
            found += [os.path.join(d, f) for f in files if f.endswith(".md")]
        return sorted(found)


def prose_lines(text, keep_code=False):
    """(line number, line) outside fenced code blocks; inline code spans blanked unless keep_code."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"\s*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        yield n, line if keep_code else re.sub(r"`[^`]*`", "``", line)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, result = {}, set()
        with open(path, encoding="utf-8") as f:
            for _, line in prose_lines(f.read(), keep_code=True):
                m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                s = slug(m.group(1))
                k = seen.get(s, 0)
                seen[s] = k + 1
                result.add(s if k == 0 else "%s-%d" % (s, k))
        cache[path] = result
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    broken = 0
    checked = 0
    for md in markdown_files(root):
        with open(md, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, ...
                    continue
                checked += 1
                path, _, anchor = target.partition("#")
                dest = md if path == "" else os.path.normpath(os.path.join(os.path.dirname(md), path))
                where = "%s:%d: %s" % (os.path.relpath(md, root), n, target)
                if not os.path.exists(dest):
                    print("%s: no such file" % where)
                    broken += 1
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    print("%s: no heading with anchor #%s" % (where, anchor))
                    broken += 1
    # Every guide page is reachable from the README's feature table (issue 41).
    readme, guides = os.path.join(root, "README.md"), os.path.join(root, "docs", "guide")
    if os.path.isfile(readme) and os.path.isdir(guides):
        with open(readme, encoding="utf-8") as f:
            linked = set(re.findall(r"\]\(docs/guide/([^)#\s]+)", f.read()))
        for page in sorted(os.listdir(guides)):
            if page.endswith(".md") and page not in linked:
                print("README.md: docs/guide/%s is not linked from the README" % page)
                broken += 1
    print("check_doc_links: %d relative links checked, %d broken" % (checked, broken),
          file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
