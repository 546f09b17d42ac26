"""The AMPS filter language: one AST (``ast``), a parser and canonical printer, the reference
evaluator (``evaluate``) and a compiled fast path (``compiler``) that must agree with it.

Submodules are imported where needed so that importing this package stays cheap.
"""
