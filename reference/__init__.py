"""Instructor-only reference implementations: what the exercises ask students to write.

Hidden tests import from here, and only inside `### BEGIN HIDDEN TESTS` regions; lectures, visible tests and `utils/`
never do. The student edition (`make student-edition`) does not ship this package, and
`tests/test_answers_stay_with_the_instructor.py` checks that no solution can be read in what students receive.
Where torch itself can answer (finfo, strides, autograd, torch.optim, FlopCounterMode, autocast), hidden tests ask
torch instead, and nothing lives here. The grader's sandbox lets graded notebooks read this folder (their hidden
tests import it) and flags a student's code that names it.
"""
