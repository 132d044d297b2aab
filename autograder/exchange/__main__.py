"""`python -m autograder.exchange check-students-env ENV` (students_env.py)."""
from autograder.exchange.students_env import main

raise SystemExit(main())
