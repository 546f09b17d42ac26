"""Puts this folder on ``sys.path`` (pytest does so for a conftest's folder), so test modules in
every subfolder can import the shared helpers here (``inprocess``, ``probe``)."""
