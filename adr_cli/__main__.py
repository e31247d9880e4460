import sys

from adr_cli.main import main

sys.exit(main())
