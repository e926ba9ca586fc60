"""The README's output blocks, made by running its commands: the example handbook ingested into a
fresh store, then each command whose output the README shows, as a user would type it.

    python scripts/readme_output.py           # run them and write their output into README.md
    python scripts/readme_output.py --check   # run them; fail when README.md shows something else

Each block sits between ``<!-- output: NAME -->`` and ``<!-- /output -->``; NAME is a key of
``COMMANDS``. The packaged models answer (the ``offline`` and ``local-llm`` extras), greedy, on one
thread, so the same machine prints the same answer.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
CLI = [sys.executable, "-m", "qrag_qdrant"]
#: block name -> the command line the README shows (after ``qrag-qdrant``)
COMMANDS = {
    "query": ["query", "How often does the on-call rotation change?"],
    "abstain": ["query", "--no-generate", "Who painted the Mona Lisa?"],
}
BLOCK = re.compile(r"(<!-- output: (?P<name>[a-z-]+) -->\n```text\n)(?P<body>.*?)(```\n<!-- /output -->)", re.DOTALL)
#: the width the blocks are printed at (rich wraps to it)
COLUMNS = "100"


def run_all() -> dict[str, str]:
    """Each block's text: the prompt line, then what the command printed."""
    with tempfile.TemporaryDirectory() as store:
        env = os.environ | {"QRAG_STORE": store, "QRAG_NAMESPACE": "default", "COLUMNS": COLUMNS, "NO_COLOR": "1"}
        env.pop("QRAG_CONFIG", None)
        subprocess.run([*CLI, "ingest", str(REPO / "examples" / "handbook")], env=env, check=True, capture_output=True)
        outputs = {}
        for name, arguments in COMMANDS.items():
            done = subprocess.run([*CLI, *arguments], env=env, capture_output=True, text=True, cwd=REPO)
            shown = " ".join(f'"{a}"' if " " in a else a for a in arguments)
            outputs[name] = f"$ qrag-qdrant {shown}\n{done.stdout}"
    return outputs


def with_outputs(text: str, outputs: dict[str, str]) -> str:
    def replaced(match: re.Match[str]) -> str:
        return match[1] + outputs[match["name"]] + match[4]

    return BLOCK.sub(replaced, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when README.md differs from a real run")
    args = parser.parse_args(argv)
    text = README.read_text()
    names = {match["name"] for match in BLOCK.finditer(text)}
    if names != set(COMMANDS):
        print(f"README.md's output blocks {sorted(names)} are not {sorted(COMMANDS)}", file=sys.stderr)
        return 1
    current = with_outputs(text, run_all())
    if args.check:
        if current != text:
            print("README.md's output differs from a real run: python scripts/readme_output.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(current)
    return 0


if __name__ == "__main__":
    sys.exit(main())
