from __future__ import annotations

import sys

from campaignops.cli import main

sys.exit(main())
