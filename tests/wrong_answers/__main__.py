import sys

from tests.wrong_answers import main

sys.exit(main())
