"""The checks of a plan: schemas and the API server's rules, provider inputs, placement, the policy pack."""
