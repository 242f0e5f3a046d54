import sys

from hopsim.cli import main

sys.exit(main())
