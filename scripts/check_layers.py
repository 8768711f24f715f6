#!/usr/bin/env python3
# Keeps includes pointing down: a module under src/ or include/headroom/ may include only its own headers and
# those of modules listed before it in docs/design.md's module map. Run by ctest (`layers`); exits 1 on a breach.
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Known upward includes, each a plain options record read by a module below its owner. Listed one by one so a
# new breach fails; an entry that no longer occurs fails too, so the list only shrinks.
ALLOWED_UPWARD = {
    # StatusPrinter reads verbosity and -j from the builder's options record.
    ("include/headroom/status/status_printer.h", "build"),
    # The jobserver client's start-up messages depend on verbosity.
    ("src/exec/jobserver.cc", "build"),
    # Tools receive the parsed command-line options.
    ("include/headroom/tools/tool.h", "cli"),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"headroom/([^/"]+)/')


def module_order():
    """The modules in the order of the module map table in docs/design.md (lowest first)."""
    text = open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8").read()
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\|\s*`([a-z_]+)`\s*\|", section, re.M)]


def sources():
    """(path relative to ROOT, module) for every source and header of the library."""
    for top, depth in (("src", 1), (os.path.join("include", "headroom"), 2)):
        for directory, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(directory, name), ROOT)
                parts = path.split(os.sep)
                if len(parts) > depth + 1:  # src/main.cc belongs to no module
                    yield path, parts[depth]


def main():
    order = module_order()
    rank = {module: index for index, module in enumerate(order)}
    problems = []
    used_exceptions = set()
    for path, module in sources():
        if module not in rank:
            problems.append(f"{path}: module '{module}' is missing from docs/design.md's module map")
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                if target not in rank:
                    problems.append(f"{path}:{number}: includes unknown module '{target}'")
                elif rank[target] > rank[module]:
                    if (path, target) in ALLOWED_UPWARD:
                        used_exceptions.add((path, target))
                    else:
                        problems.append(f"{path}:{number}: {module} includes {target}, which the module map "
                                        f"lists after it: {line.strip()}")
    for path, target in sorted(ALLOWED_UPWARD - used_exceptions):
        problems.append(f"scripts/check_layers.py: stale exception ({path}, {target}); remove it")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); module order: {' < '.join(order)}", file=sys.stderr)
        return 1
    print(f"check_layers: ok ({' < '.join(order)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
