"""The README's Python example runs as printed (so the layout section stays current)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_python_example_of_the_readme_runs():
    text = (ROOT / "README.md").read_text()
    layout = text[text.index("## Layout"):]
    blocks = re.findall(r"```python\n(.*?)```", layout, flags=re.S)
    assert blocks, "the README's layout section has no Python example"
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert float(lines[0]) > 1.0  # a bounded slowdown
    assert "spartan-bm" in lines[1]  # the records name the nodes
