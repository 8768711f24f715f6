#!/usr/bin/env python3
# Checks every relative link in README.md, ROADMAP.md and docs/*.md: the file exists and, for `file#anchor`, the
# anchor is one of the target's headings as GitHub spells it. Prints each broken link; exits 1 if any.
import functools
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def without_code(text):
    """The text with fenced code blocks and inline code removed (links there are not links)."""
    lines, in_fence = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)  # a page is linked to many times: read and parse it once
def anchors(path):
    found, counts, in_fence = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        match = None if in_fence else re.match(r"^#{1,6}\s+(.*)$", line)
        if not match:
            continue
        base = slug(match.group(1))
        n = counts.get(base, 0)
        found.add(base if n == 0 else f"{base}-{n}")
        counts[base] = n + 1
    return found


def main():
    pages = [ROOT / "README.md", ROOT / "ROADMAP.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = 0
    for page in pages:
        if not page.exists():
            continue
        for target in LINK.findall(without_code(page.read_text(encoding="utf-8"))):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = page if not file_part else (page.parent / file_part).resolve()
            problem = None
            if not dest.exists():
                problem = "no such file"
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problem = f"no heading '#{anchor}'"
            if problem:
                broken += 1
                print(f"{page.relative_to(ROOT)}: {target}: {problem}")
    print(f"{len(pages)} pages checked, {broken} broken link(s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
