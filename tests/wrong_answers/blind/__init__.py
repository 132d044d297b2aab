"""Wrong answers written from the student edition alone (issue #61): the task texts and visible tests of release/ and the
lectures of notebooks/, before reading the hidden tests, the reference checks or the shared hints. Each entry's `names`
was written from its mistake, before its feedback was seen. tests/test_wrong_answers.py holds the share of these whose
feedback names the mistake to at least 85% per exercise."""
