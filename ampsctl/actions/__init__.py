"""Action modules as ampsctl runs them: the faucet (manifold affinity) action and its Do steps."""
