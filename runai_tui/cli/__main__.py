import sys

from runai_tui.cli.entry import main

sys.exit(main())
