"""Second solutions of every graded task, one module per exercise: `VARIANTS = {grade_id: cell source}`.

Each was written from the task's text in a different but equivalent style to the instructor's solution (another
order of float operations, einsum instead of matmul, bit fields instead of formulas, ...). Graded end to end
(tests/test_autograde.py, tests/test_variants.py), each must earn full marks: a correct solution loses no point
to the order in which it rounds.
"""
