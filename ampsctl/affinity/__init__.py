"""The faucet assignment engine of amps-action-on-manifold-affinity, and its event files."""
