"""Rule modules, one per config section. Importing this package registers every rule."""

from ampsctl.config.rules import (  # noqa: F401  (each import registers its rules)
    actions,
    admin,
    conflated,
    general,
    loading,
    log_targets,
    messagetypes,
    modules,
    queues,
    replication,
    security,
    sow_topic,
    transports,
    txlog,
    units_rules,
    views,
)
