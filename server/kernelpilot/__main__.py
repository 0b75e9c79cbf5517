"""`python -m kernelpilot ...` is the CLI (what stored task commands call)."""

from kernelpilot.adapters.cli import main

raise SystemExit(main())
