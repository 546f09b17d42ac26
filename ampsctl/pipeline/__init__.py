"""The data pipeline: journal compaction, export and SOW queries on two engines.

``local`` is the embedded default and the reference semantics (it reuses ``ampsctl.sow``);
``spark`` runs the same jobs on Apache Spark through PySpark. This package is the only owner
of Spark in ampsctl (DESIGN.md): nothing below it imports pyspark.

Importing this package is cheap on purpose: it imports nothing, so ``ampsctl --help`` never
loads pyspark. Import the submodules you need (``session``, ``jobs``, ``engines`` ...).
"""
