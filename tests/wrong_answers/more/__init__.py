"""More typical wrong answers (issue #50), one module per exercise as in tests/wrong_answers: `corpus()` reads each
exercise's WRONG from both places. They live in their own modules so that work on the first set and on this one
do not edit the same file."""
