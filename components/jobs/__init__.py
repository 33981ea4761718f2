"""The workloads: MaxText RayJobs (and an optional RayCluster), the FSDP torchrun Indexed Jobs, and the
opt-in smoke checks. They take their numbers from facts and config and build on the kube layer."""
