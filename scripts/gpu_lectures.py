"""Re-run the GPU lectures end to end on a CUDA GPU, one kernel each, ready to commit (issues #21 and #25).

    .venv/bin/python scripts/gpu_lectures.py --out DIR [--execute] [--dry-run] [--only 05_flops_mfu ...]

`scripts/gpu_session.py` calls it; it is a script of its own because it needs the course's environment (nbformat,
nbclient, torch, utils) where the session's driver needs only Python. For each lecture of LECTURES it

1. reads notebooks/NAME.ipynb and applies the prepared edits (TEXT_EDITS: what issue #50 queued for lectures 5, 7, 9
   and 10 after the run of 2026-11-26 applied the earlier ones), each checked to apply (or to be applied already); a
   lecture of PROMOTE becomes a GPU lecture: its device line and its GPU cells are tagged `gpu-figure` and
   `nbval-ignore-output`, and the "Stored figures" note and the cell naming the machine's CPU go under the device line
   (lecture 10 became one that way);
2. with --execute, runs the whole notebook in one kernel (nbclient, the course's kernel), so that no stored output
   is spliced from two runs; without CUDA only with --dry-run (a rehearsal: its outputs are not for committing);
3. stamps the run: the notebook's `gpu_figures` metadata and its note get this GPU, torch, CUDA and date; after a
   run of the whole notebook on the GPU, the metadata says so (`whole_run`), the note says that one machine made every
   output (the cell under it names that machine's CPU), and the labels of the GPU figures, which said that the other
   outputs came from a CPU run, go;
4. checks the result as tests/test_notebook_conventions.py will (and, after a GPU run, that no GPU figure holds a
   "Skipped" line or an error), and writes DIR/notebooks/NAME.ipynb and DIR/lectures.json (edits, problems, seconds,
   the text outputs of the GPU figures).
Exit status 1 when any lecture has a problem.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import sys
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
KERNEL = "cs336-primitives"
GPU_FIGURE, IGNORE_OUTPUT = "gpu-figure", "nbval-ignore-output"
LECTURES = ["02_tensors_on_gpu", "05_flops_mfu", "07_models_optimizers", "08_training_loop", "09_mixed_precision",
            "10_accounting_a_training_run"]
PROMOTE = {"10_accounting_a_training_run"}  # lectures that become GPU lectures in this run
# The note under the device line after a run of the whole notebook on the GPU: one machine made every output.
NOTE = ('**Stored figures.** The outputs saved in this notebook, the ones you see before running it, were measured in one '
        'run on an\n{device} (torch {torch}, CUDA {cuda}) on {date}; the cell below names that machine\'s CPU. Run the '
        'notebook to measure\nyour own machine instead: on a CPU the GPU-only cells print one "Skipped" line.\n')
# The note while the GPU figures are kept from a GPU run and every other output comes from a CPU run
# (scripts/execute_notebooks.py), and the label above each such figure (tests/test_notebook_provenance.py).
SPLICED_NOTE = ('**Where the stored outputs come from.** Two runs, on two machines. The device line above and the cells '
                'labelled\n*stored from the GPU run* were measured on an {device} (torch {torch}, CUDA {cuda}) on '
                '{date}.\nEvery other output comes from the last run of the whole notebook, on a machine without a '
                'GPU, which the\ncell below names: its timings and measurements are that machine\'s, not the GPU '
                'server\'s. Run the notebook to measure\nyour own machine: on a CPU the GPU-only cells print one '
                '"Skipped" line.\n')
LABEL = "*The output below is stored from the GPU run ({device}, {date}), not from the CPU run named at the top.*\n"
LABEL_TAG = "gpu-figure-label"
# The cell under the note: the machine that ran the notebook (its CPU), whatever made the GPU figures.
HOST_CELL = ('import datetime\n\nfrom utils.device import describe_host\n\n'
             'print(f"this run: {describe_host()}, {datetime.date.today()}")')
HOST_ID = "this-run"
NOTE_ID = "stored-gpu-figures"
NOTE_IDS = ("gpu-figures-note", NOTE_ID)  # the note's id in lectures 2, 5, 7, 8 and 9, and in a promoted lecture
# (lecture, cell type, old text, new text): edits to make on the next GPU run (a GPU figure's code changes only there,
# so that its stored output stays its code's, and so does prose that describes that output); each must be found, or
# be done already (old gone, new there). Queued by issue #50 (the TA review of 2026-11-28):
TEXT_EDITS: list[tuple[str, str, str, str]] = [
    # #50 T3: lecture 10's sections 5 to 7 run on the CPU (one thread) even on the GPU machine: their times say so, and the
    # peak printed beside the achieved rate is the CPU's (none), not the GPU's that CUDA's presence named.
    ('10_accounting_a_training_run', 'code',
     'print(f"matmul rate: {matmul_rate / 1e9:.1f} GFLOP/s -> predicted step {predicted_step * 1e3:.2f} ms (matmuls only)")\n'
     'print(f"measured step: {step_seconds * 1e3:.2f} ms; the matmuls at that rate explain {predicted_step / step_seconds:.0%}")',
     'print(f"matmul rate (CPU, 1 thread): {matmul_rate / 1e9:.1f} GFLOP/s -> predicted step {predicted_step * 1e3:.2f} ms "\n'
     '      "(matmuls only)")\n'
     'print(f"measured step (CPU, 1 thread): {step_seconds * 1e3:.2f} ms; the matmuls at that rate explain "\n'
     '      f"{predicted_step / step_seconds:.0%}")'),
    ('10_accounting_a_training_run', 'code',
     'print(f"achieved: {predicted_flops / step_seconds / 1e9:.1f} GFLOP/s.", explain_peak(current_device_name(), torch.float32))',
     "# The step ran on the CPU whatever GPU the machine has: the peak that applies is the CPU's, and the table has none.\n"
     'print(f"achieved (CPU, 1 thread): {predicted_flops / step_seconds / 1e9:.1f} GFLOP/s.", explain_peak("cpu", torch.float32))'),
    ('10_accounting_a_training_run', 'markdown',
     'On a machine with a GPU the line after "achieved" above names the GPU\'s fp32 peak anyway (the\n'
     "stored output names the H100's): that is not the peak of the CPU thread that ran this step, so do not divide\n"
     'by it. Section 8',
     'The line after "achieved" above says so, on any machine: the step ran on\n'
     'the CPU, whatever GPU the machine has. Section 8'),
    ('10_accounting_a_training_run', 'code',
     '    "step time (s)": (predicted_step, step_seconds),\n'
     '    "run time (s), from the timed step": (STEPS * step_seconds, run_seconds),',
     '    "step time (s), CPU, 1 thread": (predicted_step, step_seconds),\n'
     '    "run time (s), CPU, from the timed step": (STEPS * step_seconds, run_seconds),'),
    ('10_accounting_a_training_run', 'code',
     '    print(f"{name:36s} predicted {shown(predicted)}',
     '    print(f"{name:38s} predicted {shown(predicted)}'),
    # #50 D4: timings printed to the digits that carry information, as lectures 3 and 8 print theirs.
    ('05_flops_mfu', 'code',
     'print(f"first call {first_call * 1e3:.3f} ms, warm median {warm * 1e3:.3f} ms, ratio {first_call / warm:.1f}x")',
     'from utils.units import significant              # 2 significant digits: the rest is noise\n'
     '\n'
     'print(f"first call {significant(first_call * 1e3, 2)} ms, warm median {significant(warm * 1e3, 2)} ms, "\n'
     '      f"ratio {significant(first_call / warm, 2)}x")'),
    ('05_flops_mfu', 'code',
     '        cells.append(f"{rate / 1e9:10.1f} GFLOP/s" + (f" MFU {rate / peaks[dtype]:.2f}" if peaks[dtype] else " " * 9))',
     '        cells.append(f"{significant(rate / 1e9, 3):>10} GFLOP/s" + (f" MFU {rate / peaks[dtype]:.2f}" if peaks[dtype] else " " * 9))'),
    ('05_flops_mfu', 'code',
     'peaks = {dtype: peak_flops(current_device_name(), dtype) for dtype in dtypes}\n'
     'print(f"{\'n\':>6} "',
     'peaks = {dtype: peak_flops(current_device_name(), dtype) for dtype in dtypes}\n'
     'from utils.units import significant              # 3 significant digits: the rest is noise\n'
     'print(f"{\'n\':>6} "'),
    ('09_mixed_precision', 'code',
     '    print(f"{name}: {n}x{n} matmul in {s * 1e3:8.3f} ms = {2 * n**3 / s / 1e9:8.1f} GFLOP/s")\n'
     'print(f"bf16 speedup on {current_device_name()}: {seconds[\'fp32\'] / seconds[\'bf16\']:.2f}x")',
     '    print(f"{name}: {n}x{n} matmul in {significant(s * 1e3, 3):>7} ms = {significant(2 * n**3 / s / 1e9, 3):>9} GFLOP/s")\n'
     'print(f"bf16 speedup on {current_device_name()}: {seconds[\'fp32\'] / seconds[\'bf16\']:.2g}x")'),
    ('09_mixed_precision', 'code',
     'seconds = {}\n'
     'for dtype in (torch.float32, torch.bfloat16):',
     'seconds = {}\n'
     'from utils.units import significant              # 3 significant digits: the rest is noise\n'
     'for dtype in (torch.float32, torch.bfloat16):'),
    # #61 U6 (the TA review of 2026-11-29): lecture 9's figure title names every format its left panel draws (fp8 too,
    # where the GPU has it), not two of three.
    ('09_mixed_precision', 'code',
     'fig.suptitle("Measured: fp32 against bf16")',
     'fig.suptitle(f"Measured: {\', \'.join(seconds)} matmuls; fp32 and bf16 activations")'),
    # #50 T11: lecture 7's eight-card column assumes the 16 bytes sharded; its header says so.
    ('07_models_optimizers', 'code',
     '{\'params on 1 H100\':>17} {\'on 8 H100s\':>11}")',
     '{\'params on 1 H100\':>17} {\'on 8 H100s, sharded\':>20}")'),
    ('07_models_optimizers', 'code',
     '{one / 1e9:16.1f}B {eight / 1e9:10.1f}B")',
     '{one / 1e9:16.1f}B {eight / 1e9:19.1f}B")'),
]

def tags(cell) -> list[str]:
    return cell.setdefault("metadata", {}).setdefault("tags", [])


def first_code_cell(notebook):
    return next(cell for cell in notebook.cells if cell.cell_type == "code")


def apply_edits(name: str, notebook) -> tuple[list[str], list[str]]:
    """Apply the prepared edits to `notebook` in place; return (what was done, problems)."""
    done, problems = [], []
    for lecture, cell_type, old, new in TEXT_EDITS:
        if lecture != name:
            continue
        cells = [c for c in notebook.cells if c.cell_type == cell_type]
        hits = [c for c in cells if old in c.source]
        if hits:
            for cell in hits:
                cell.source = cell.source.replace(old, new)
            done.append(f"{cell_type} cell {hits[0].id}: {old!r} -> {new!r}")
        elif not any(new in c.source for c in cells):
            problems.append(f"edit no longer applies (the cell changed; edit it by hand): {old!r} -> {new!r}")
    first = first_code_cell(notebook)
    if name in PROMOTE and "gpu_figures" not in notebook.metadata:
        gpu_cells = [c for c in notebook.cells if c.cell_type == "code" and "skip_unless_cuda(" in c.source]
        for cell in [first] + gpu_cells:
            for tag in (IGNORE_OUTPUT, GPU_FIGURE):
                if tag not in tags(cell):
                    tags(cell).append(tag)
        index = notebook.cells.index(first) + 1
        if not any(c.get("id") == NOTE_ID for c in notebook.cells):
            note = nbformat.v4.new_markdown_cell(NOTE, id=NOTE_ID)
            host = nbformat.v4.new_code_cell(HOST_CELL, id=HOST_ID, metadata={"tags": [IGNORE_OUTPUT]})
            notebook.cells[index:index] = [note, host]
        notebook.metadata["gpu_figures"] = {}  # stamped after the run
        done.append(f"made a GPU lecture: cells {', '.join(c.id for c in [first] + gpu_cells)} tagged "
                    f"{GPU_FIGURE}, the stored-figures note under the device line")
    return done, problems


def stamp(notebook, run: dict, whole_run: bool = False) -> list[str]:
    """Write `run` (device, torch, cuda, date) into the notebook's gpu_figures metadata and its note. After a run of
    the whole notebook on the GPU (`whole_run`), one machine made every output: the note says so and the labels of
    the GPU figures go."""
    old = notebook.metadata.get("gpu_figures") or {}
    problems = []
    if whole_run:
        notes = [c for c in notebook.cells if c.get("id") in NOTE_IDS]
        if not notes:
            problems.append("no note under the device line (cell id gpu-figures-note); write it by hand")
        for cell in notes:
            cell.source = NOTE.format(**run)
        notebook.cells = [c for c in notebook.cells if LABEL_TAG not in c.get("metadata", {}).get("tags", [])]
        notebook.metadata["gpu_figures"] = {**run, "whole_run": True}
        return problems
    if old:
        old_note, before = NOTE.format(**old), f"{old['device']} (torch {old['torch']}, CUDA {old['cuda']}) on {old['date']}"
        after = f"{run['device']} (torch {run['torch']}, CUDA {run['cuda']}) on {run['date']}"
        notes = [c for c in notebook.cells if c.cell_type == "markdown" and (old_note in c.source or before in c.source)]
        if not notes:
            problems.append(f"no note names the stored run ({before}); update it by hand")
        for cell in notes:
            cell.source = cell.source.replace(old_note, NOTE.format(**run)).replace(before, after)
    else:
        note = next((c for c in notebook.cells if c.get("id") == NOTE_ID), None)
        if note is not None:
            note.source = NOTE.format(**run)
    notebook.metadata["gpu_figures"] = dict(run)
    return problems


def check(notebook, run: dict, executed_on_gpu: bool) -> list[str]:
    """What tests/test_notebook_conventions.py will check, and (after a GPU run) the outputs of the GPU figures."""
    problems = []
    meta = notebook.metadata.get("gpu_figures") or {}
    notes = "".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    if not all(meta.get(key) and str(meta[key]) in notes for key in ("device", "date", "torch")):
        problems.append("the notes do not name the device, date and torch of gpu_figures")
    figures = [c for c in notebook.cells if GPU_FIGURE in c.get("metadata", {}).get("tags", [])]
    if not figures or figures[0] is not notebook.cells[1]:
        problems.append("the device line (cell 1) is not the first GPU figure")
    if any(IGNORE_OUTPUT not in c.metadata.get("tags", []) for c in figures):
        problems.append(f"a GPU figure lacks {IGNORE_OUTPUT}")
    for cell in notebook.cells:
        if cell.cell_type == "code" and ast.parse(cell.source) and any(
                o.get("output_type") == "error" for o in cell.get("outputs", [])):
            problems.append(f"cell {cell.id} raised an error")
    if executed_on_gpu:
        for cell in figures:
            text = json.dumps(cell.get("outputs", []))
            if "Skipped" in text or "CPU only" in text:
                problems.append(f"GPU figure {cell.id} holds a CPU run's output")
        if figures and run["device"] not in json.dumps(figures[0].get("outputs", [])):
            problems.append("the device line does not name the GPU")
        from tests.test_notebook_provenance import provenance_problems  # what that test will check (#25 B5)
        problems += provenance_problems(json.loads(nbformat.writes(notebook)))
    return problems


def figure_text(notebook) -> dict[str, str]:
    """The text output of each GPU figure, by cell id (for the session's summary)."""
    texts = {}
    for cell in notebook.cells:
        if GPU_FIGURE in cell.get("metadata", {}).get("tags", []):
            texts[cell.id] = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")
    return texts


def this_run(dry_run: bool) -> dict:
    import torch
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    if torch.cuda.is_available():
        return {"cuda": torch.version.cuda, "date": date, "device": torch.cuda.get_device_name(),
                "torch": torch.__version__}
    if not dry_run:
        sys.exit("scripts/gpu_lectures.py needs CUDA to store GPU figures (or --dry-run for a rehearsal on a CPU)")
    return {"cuda": "none", "date": date, "device": "CPU (dry run, not for committing)", "torch": torch.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=LECTURES, choices=LECTURES)
    parser.add_argument("--execute", action="store_true", help="run each lecture end to end in one kernel")
    parser.add_argument("--dry-run", action="store_true", help="allowed without CUDA; the result is a rehearsal")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = parser.parse_args(argv)
    run = this_run(args.dry_run)
    import torch
    on_gpu = torch.cuda.is_available()
    (args.out / "notebooks").mkdir(parents=True, exist_ok=True)
    report = {"run": run, "executed": args.execute, "on_gpu": on_gpu, "lectures": {}}
    failed = False
    for name in args.only:
        path = REPO / "notebooks" / f"{name}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        started = time.monotonic()
        done, problems = apply_edits(name, notebook)
        if args.execute and not problems:
            from nbclient import NotebookClient
            print(f"  {name}: executing in one kernel ...", flush=True)
            try:
                NotebookClient(notebook, timeout=args.timeout, kernel_name=KERNEL,
                               resources={"metadata": {"path": str(path.parent)}}).execute()
            except Exception as error:  # the cell's error is the report
                problems.append(f"execution stopped: {type(error).__name__}: {str(error)[-600:]}")
        problems += stamp(notebook, run, whole_run=args.execute and on_gpu and not problems)
        problems += check(notebook, run, executed_on_gpu=args.execute and on_gpu)
        nbformat.validate(notebook)
        nbformat.write(notebook, args.out / "notebooks" / f"{name}.ipynb")
        seconds = round(time.monotonic() - started, 1)
        report["lectures"][name] = {"edits": done, "problems": problems, "seconds": seconds,
                                    "figures": figure_text(notebook) if args.execute else {}}
        failed |= bool(problems)
        print(f"  {name}: {'OK' if not problems else 'PROBLEMS'} in {seconds} s; " + "; ".join(done + problems),
              flush=True)
        (args.out / "lectures.json").write_text(json.dumps(report, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
