"""Facts with no Pulumi import: GKE and Kubernetes names (and, later, topology and prices).

The stack, the policy pack (in its own venv, without pydantic), preflight and the tests all read these.
"""
