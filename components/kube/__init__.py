"""Cluster objects: Kueue and its queues, the RDMA and DRANET network objects, the trainer code delivered
as a ConfigMap, and the target every job shares (provider, namespace, queue).

Imports facts, config and infra; the jobs (`components.jobs`) build on these.
"""
