"""Command-line interface: thin typer commands over the library. Only this package prints or exits."""
