"""`python -m hpcsched`: the `hpcsched` command."""

import sys

from hpcsched.cli import main

sys.exit(main())
