"""Command-line interface (typer). Thin: parse arguments, call the layers, print."""
