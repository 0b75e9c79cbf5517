"""`python -m kernelpilot.runner`: the candidate's runner process (kernelpilot.runner.serve)."""

from kernelpilot.runner.serve import main

raise SystemExit(main())
