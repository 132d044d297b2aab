"""Re-execute notebooks in place and store their outputs, keeping the GPU figures on a machine without a GPU.

    .venv/bin/python scripts/execute_notebooks.py notebooks/05_flops_mfu.ipynb [...]     (make notebooks)

Some lectures store figures measured on a real GPU (cells tagged `gpu-figure`; docs/gpu.md). Re-running
such a lecture on a CPU, after editing its prose or a CPU cell, would replace them with "Skipped: ..." lines.
`jupyter nbconvert --execute` cannot keep some cells' outputs, so this script runs the notebook with nbclient (the
same executor) and, where CUDA is missing, puts back the stored outputs of the `gpu-figure` cells, with this run's
execution counts (so that the counts read in order from top to bottom: tests/test_notebook_provenance.py). Only a cell
whose code is unchanged (comments aside) gets its output back; an edited GPU cell is reported and keeps the CPU output:
it needs a GPU run. The notebook's outputs then come from two machines, so `whole_run` is dropped from its
`gpu_figures` metadata and each kept GPU figure needs its label (the provenance test says which). On a machine with
CUDA every cell's output is new.
"""
from __future__ import annotations

import argparse
import copy
import io
import sys
import tokenize
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

GPU_FIGURE = "gpu-figure"
KERNEL = "cs336-primitives"


def is_gpu_figure(cell) -> bool:
    return GPU_FIGURE in cell.get("metadata", {}).get("tags", [])


def code_without_comments(source: str) -> str:
    """The code of a cell with its comments and blank lines left out: what decides its output."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]
        code = tokenize.untokenize(tokens)
    except (tokenize.TokenError, SyntaxError, IndentationError):  # an IPython magic: compare as it is
        return source
    return "\n".join(line.rstrip() for line in code.splitlines() if line.strip())


def execute(path: Path, timeout: int = 600) -> list[str]:
    """Execute the notebook at `path` in place; return what needs attention (edited GPU cells)."""
    notebook = nbformat.read(path, as_version=4)
    stored = {cell.id: copy.deepcopy(cell) for cell in notebook.cells if is_gpu_figure(cell)}
    NotebookClient(notebook, timeout=timeout, kernel_name=KERNEL,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    problems = []
    if not torch.cuda.is_available():
        for cell in notebook.cells:
            old = stored.get(cell.id)
            if old is None:
                continue
            if code_without_comments(old.source) != code_without_comments(cell.source):
                problems.append(f"{path}: cell {cell.id} is a GPU figure whose code changed; run it on a GPU")
                continue
            cell.outputs = old.outputs  # the GPU run's output, under this run's execution count
            cell.metadata.pop("execution", None)  # this run's timestamps are not the output's
        if stored:
            notebook.metadata.get("gpu_figures", {}).pop("whole_run", None)
    nbformat.write(notebook, path)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    problems = []
    for path in args.notebooks:
        print(f"executing {path} ...", flush=True)
        problems += execute(path)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
