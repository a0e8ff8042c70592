"""``python -m loopdbg``: the command-line program the wheel carries."""

import sys

from ._cli import main

sys.exit(main())
