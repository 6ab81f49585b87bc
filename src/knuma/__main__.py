"""`python -m knuma ...`: the `knuma` command (how `knuma up` starts `knuma scheduler` with the same interpreter)."""

from knuma.cli.main import main

main()
