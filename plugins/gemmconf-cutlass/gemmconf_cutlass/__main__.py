"""`python -m gemmconf_cutlass`: the survey and prebuild command (survey.py)."""

from gemmconf_cutlass.survey import main

raise SystemExit(main())
