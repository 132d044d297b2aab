"""The order in which `make test`'s two pytest-xdist workers take the test files.

`--dist loadfile` keeps each file on one worker (its shared fixtures, such as the graded class, run once), and
`--no-loadscope-reorder` hands the files out in collection order. The files with a long shared fixture go first, so
that the many quick files fill in at the end, instead of one long file running alone on one core while the other
core idles. Longest first, as measured with `--durations` (the figures: docs/benchmarks.md).
"""
SLOW_FIRST = ["test_class_hub.py", "test_autograde.py", "test_grading_faults.py", "test_trusted_grading.py",
              "test_browser.py", "test_clusters.py", "test_postgres.py", "test_nbgrader_workflow.py", "test_gradebook.py",
              "test_readme_commands.py", "test_class_report.py", "test_accounting_reference.py",
              "test_grader_boundary.py", "test_plain_nbgrader.py", "test_progress_check.py", "test_grader_parts.py",
              "test_student_edition.py", "test_variants.py", "test_release.py", "test_lab.py"]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # stable: the others keep their order
