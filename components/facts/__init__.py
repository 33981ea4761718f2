"""The lowest layer: facts with no Pulumi import and no pydantic.

Accelerator topology and machine shapes (`topology`), GKE and Kubernetes names (`gke`), prices and the
cost estimate (`cost`, `prices.yaml`). The stack, the policy pack (in its own venv), preflight and the
tests all read these; nothing here imports another layer.
"""
