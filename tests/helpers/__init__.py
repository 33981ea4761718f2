"""What the infrastructure tests share: plan helpers, Kubernetes objects, policy fixture stacks, CRD mirrors.

Test modules import from here, never from each other or from conftest.py (which only holds fixtures).
"""
