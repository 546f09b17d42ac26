"""ampsctl: tools for teams that run 60East AMPS."""

__version__ = "0.1.0"
