"""The command-line face: a thin typer app over the library (``safeexec --help``)."""
