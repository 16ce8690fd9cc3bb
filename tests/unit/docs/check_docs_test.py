#!/usr/bin/env python3
"""scripts/check-docs on copies of the documentation: the checked-in docs pass, and each check
fails, naming the problem, on a copy broken the way it guards against (a broken link or anchor, a
scenario key or action key the loader accepts but the docs do not list and the other way round, a
flag a program does not have, a make target the Makefile does not have).

Usage: check_docs_test.py SOURCE_DIR FAULTLINE_PROXY FAULTLINE_HARNESS"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

source, proxy, harness = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
SKIP = 77  # SKIP_RETURN_CODE in CMakeLists.txt
for program in (proxy, harness):
    if not os.access(program, os.X_OK):
        # The ThreadSanitizer tree builds faultline-proxy only; the release and ASan trees run this.
        print(f"skipped: {program} is not built in this tree")
        sys.exit(SKIP)
check_docs = source / "scripts/check-docs"
COPIED = {"README.md", "CHANGELOG.md", "CONTRIBUTING.md", "Makefile", "docs"}
failures = []


def copy_of_source(tmp):
    """The docs and the Makefile copied (to be broken), everything else linked."""
    for entry in source.iterdir():
        if entry.name == ".git" or entry.name.startswith("build"):
            continue
        if entry.name in COPIED:
            (shutil.copytree if entry.is_dir() else shutil.copy)(entry, tmp / entry.name)
        else:
            os.symlink(entry, tmp / entry.name)


def run(root, checks):
    r = subprocess.run([sys.executable, str(check_docs), "--root", str(root), "--proxy", proxy, "--harness", harness,
                        "--checks", checks], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def case(name, checks, breakage, expected):
    """Breaks a fresh copy with breakage(root), runs the check, expects exit 1 and each expected text."""
    with tempfile.TemporaryDirectory(prefix="check-docs-test.") as tmp:
        root = Path(tmp)
        copy_of_source(root)
        if breakage:
            breakage(root)
        code, out = run(root, checks)
    want = 1 if breakage else 0
    missing = [e for e in expected if e not in out]
    ok = code == want and not missing
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {code}" + ("" if ok else f" (want {want}; missing {missing})\n{out}"))
    if not ok:
        failures.append(name)


def append(rel, text):
    def go(root):
        with open(root / rel, "a") as f:
            f.write("\n" + text + "\n")
    return go


def replace(rel, old, new):
    def go(root):
        p = root / rel
        s = p.read_text()
        assert old in s, f"{rel} has no {old!r}: the test needs updating"
        p.write_text(s.replace(old, new, 1))
    return go


case("the checked-in docs pass every check", "links,make,flags,keys", None, ["ok"])
case("a link to a missing file", "links", append("docs/proxy.md", "See [the page](no-such-page.md)."),
     ["docs/proxy.md:", "broken link no-such-page.md"])
case("a link to a missing heading", "links", append("README.md", "See [keys](docs/scenarios.md#no-such-heading)."),
     ["README.md:", "scenarios.md has no heading #no-such-heading"])
case("a scenario key the loader accepts and the docs do not list", "keys",
     replace("docs/scenarios.md", "| `faults[].when.every` |", "| dropped |"),
     ["scenario key `faults[].when.every` is accepted by the loader but not listed"])
case("a documented scenario key the loader does not accept", "keys",
     replace("docs/scenarios.md", "| `faults[].when.every` |", "| `faults[].when.every` | x |\n| `faults[].when.sometimes` |"),
     ["scenario key `faults[].when.sometimes` is listed", "the loader does not accept it"])
case("an action key the docs do not list", "keys", replace("docs/scenarios.md", "| `delay` | `latency`, `jitter` |", "| `delay` | `latency` |"),
     ["action `delay` accepts `jitter`"])
case("an action type the docs do not list", "keys", replace("docs/scenarios.md", "| `stall` | `duration` |\n", ""),
     ["action type `stall` is accepted by the loader but has no row"])
case("a flag faultline-proxy does not have", "flags", append("docs/proxy.md", "Run `faultline-proxy --listen :0 --no-such-flag`."),
     ["docs/proxy.md:", "`faultline-proxy --no-such-flag`: not in `faultline-proxy --help`"])
case("a flag of another subcommand of faultline-harness", "flags",
     append("docs/harness.md", "```sh\nbuild/harness/faultline-harness validate --pods 3 my.yaml\n```"),
     ["`faultline-harness validate --pods`: not in `faultline-harness validate --help`"])
case("a flag a script does not have", "flags", append("README.md", "`scripts/chaos --scenario x --no-such-option`"),
     ["`scripts/chaos --no-such-option`: not in `scripts/chaos --help`"])
case("a flag in a flags table that the program does not have", "flags",
     replace("docs/proxy.md", "| `--http1-only` |", "| `--http1-onyl` |"),
     ["`--http1-onyl`: not in `faultline-proxy --help`"])
case("a make target the Makefile does not have", "make", append("docs/benchmarks.md", "```sh\nmake SEED=3 no-such-target\n```"),
     ["docs/benchmarks.md:", "`make no-such-target`: the Makefile has no target no-such-target"])

if failures:
    print(f"{len(failures)} cases failed: {failures}")
    sys.exit(1)
print("all cases passed")
