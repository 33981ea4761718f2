"""GCP resources: the networks, the GKE cluster, its node pools (TPU slices, GPU pools) and the bucket.

Imports facts and config only; the cluster objects (`components.kube`) and jobs build on these.
"""
