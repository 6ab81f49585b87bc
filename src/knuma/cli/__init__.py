"""The `knuma` command line: thin wrappers that parse arguments, call one function and format output."""
