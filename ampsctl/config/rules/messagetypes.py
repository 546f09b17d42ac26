"""Rules: placeholder until this section lands."""
