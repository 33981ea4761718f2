"""Tools that run on a workstation only, never in the cluster: no trainer image or code archive holds them, so an
edit here rolls no image and no job (components/infra/source_tree.py hashes workloads/<trainer> alone)."""
