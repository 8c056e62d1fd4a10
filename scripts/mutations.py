#!/usr/bin/env python3
"""mutations.py -- scripts/mutations.txt read and applied one way, for
scripts/mutate.sh's run and for its --check (which tests/e2e/
t_breaks_apply.sh runs in `make check`).

  mutations.py split LIST DIR         the breaks into DIR/001/, DIR/002/, ...,
                                      a file per field (name, claim, file,
                                      from, to, tests), as written
  mutations.py apply FILE FROM TO     replaces the one occurrence of FROM
                                      (escapes as below) in FILE by TO
  mutations.py check LIST [NAME...]   every break (or those named) without
                                      building: its fields all there, once
                                      each, its name its own, its `from`
                                      text exactly once in its file and
                                      changed by `to`, each of its `tests`
                                      a test tests/run.sh has (run.sh
                                      --list, any substring of a name as
                                      run.sh takes it); prints each break
                                      that fails, exits 1 if one does

In `from` and `to`, "\\n" is a newline and "\\t" a tab.  Run from the
top of the tree.
"""
import os
import re
import subprocess
import sys

FIELDS = ("name", "claim", "file", "from", "to", "tests")


def parse(path):
    """The breaks in the list at path, in order: dicts of their fields,
    with "_line" (where the block starts) and "_bad" (what is wrong with
    its lines)."""
    breaks, cur = [], None
    with open(path) as f:
        lines = f.read().split("\n")
    for no, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if line == "":
            cur = None
            continue
        if cur is None:
            cur = {"_line": no, "_bad": []}
            breaks.append(cur)
        m = re.match(r"([a-z]+):( |$)", line)
        if not m:
            cur["_bad"].append("line %d is not 'KEY: VALUE'" % no)
            continue
        key, val = m.group(1), line[m.end():]
        if key not in FIELDS:
            cur["_bad"].append("line %d: no such field %s:" % (no, key))
        elif key in cur:
            cur["_bad"].append("line %d: %s: a second time" % (no, key))
        else:
            cur[key] = val
    return breaks


def unescape(s):
    return s.replace("\\n", "\n").replace("\\t", "\t")


def apply_text(text, old, new):
    """text with the break applied, or raises ValueError saying why not."""
    old, new = unescape(old), unescape(new)
    if not old:
        raise ValueError("no text to replace")
    if old == new:
        raise ValueError("it replaces the text with the same text: no break")
    n = text.count(old)
    if n != 1:
        raise ValueError("%d occurrences of the text to replace" % n)
    return text.replace(old, new)


def split(path, out):
    for k, b in enumerate(parse(path), 1):
        d = os.path.join(out, "%03d" % k)
        os.makedirs(d, exist_ok=True)
        for key in FIELDS:
            if key in b:
                with open(os.path.join(d, key), "w") as f:
                    f.write(b[key])


def apply(path, old, new):
    with open(path) as f:
        text = f.read()
    try:
        text = apply_text(text, old, new)
    except ValueError as e:
        sys.exit(str(e))
    with open(path, "w") as f:
        f.write(text)


def check(path, wanted):
    names = subprocess.run(["sh", "tests/run.sh", "--list"], stdout=subprocess.PIPE,
                           universal_newlines=True, check=True).stdout.split()
    if not names:
        sys.exit("mutations.py: tests/run.sh --list names no test")
    breaks = parse(path)
    seen = {}
    for b in breaks:
        seen[b.get("name")] = seen.get(b.get("name"), 0) + 1
    total = bad = 0
    for b in breaks:
        name = b.get("name", "(the break at line %d)" % b["_line"])
        if wanted and name not in wanted:
            continue
        total += 1
        why = list(b["_bad"])
        why += ["no %s:" % k for k in FIELDS if k not in b]
        if "name" in b and seen[b["name"]] > 1:
            why.append("another break has its name")
        if "file" in b and "from" in b and "to" in b:
            try:
                with open(b["file"]) as f:
                    apply_text(f.read(), b["from"], b["to"])
            except (OSError, ValueError) as e:
                why.append("%s: %s" % (b["file"], e))
        if "tests" in b:
            if not b["tests"].split():
                why.append("no tests named")
            for t in b["tests"].split():
                if not any(t in n for n in names):
                    why.append("no test %s" % t)
        if why:
            bad += 1
            print("%s: %s" % (name, "; ".join(why)))
    missing = [w for w in wanted if w not in seen]
    for w in missing:
        print("%s: no such break" % w)
    if not total:
        sys.exit("mutations.py: no break to check")
    print("# %d breaks checked, %d that do not apply or name no test" % (total, bad))
    return 1 if bad or missing else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "split":
        split(argv[1], argv[2])
        return 0
    if len(argv) == 4 and argv[0] == "apply":
        apply(argv[1], argv[2], argv[3])
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1], argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
