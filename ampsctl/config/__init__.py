"""AMPS configuration: loading with exact source locations, the XSD, and the lint rules."""
