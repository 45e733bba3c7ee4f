"""Start-up of the command line (issue 51, item 1): the wall time of ``hf-lineage --help``, ``hf-lineage families``
and every subcommand's ``--help``, each in a fresh interpreter, and whether it imported torch.

The subcommands are the command line's own (``cli.build_parser``), so a new one is timed too. Each command runs
``--repeat`` times (default 3), in turn with the others so that a burst of load on a shared machine spreads over all of
them; the table gives the median and the CPU. Which ``hf_lineage`` is timed is the one the interpreter imports: run it
with ``PYTHONPATH`` set to another checkout to time that one (the before/after table of docs/benchmarks.md).

    python benchmarks/bench_startup.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

CODE = """
import contextlib, io, json, sys
from hf_lineage import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps({"torch": "torch" in sys.modules}), file=sys.stderr)
"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def commands() -> list[list[str]]:
    from hf_lineage import cli

    parser = cli.build_parser(only=set())  # the names alone: imports no subcommand's module
    names = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return [["--help"], ["families"], *([name, "--help"] for name in names)]


def run_once(argv: list[str], root: Path) -> tuple[float, bool]:
    start = time.perf_counter()
    # In ``root``, the folder holding the hf_lineage this script imported: ``python -c`` puts its working directory
    # first on the path, so the child imports the same one.
    run = subprocess.run([sys.executable, "-c", CODE, *argv], capture_output=True, text=True, timeout=600, cwd=root)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"hf-lineage {' '.join(argv)} failed: {run.stderr[-2000:]}")
    return seconds, json.loads(run.stderr.strip().splitlines()[-1])["torch"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (default: %(default)s)")
    args = parser.parse_args(argv)
    import hf_lineage

    todo = commands()
    times = {" ".join(c): [] for c in todo}
    torch = {}
    for _ in range(args.repeat):
        for command in todo:
            seconds, torch[" ".join(command)] = run_once(command, Path(hf_lineage.__file__).resolve().parents[1])
            times[" ".join(command)].append(seconds)
    print(f"hf_lineage from {Path(hf_lineage.__file__).parent}; {cpu_model()}; median of {args.repeat}")
    print("| command | median s | runs s | imports torch |\n|---|---:|---|---|")
    for name, runs in times.items():
        print(f"| `hf-lineage {name}` | {statistics.median(runs):.2f} | {', '.join(f'{r:.2f}' for r in runs)} "
              f"| {'yes' if torch[name] else 'no'} |")


if __name__ == "__main__":
    main()
