"""The datasets-and-checkpoints bucket, the workload namespace and service account, and their IAM link."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.config.models import StackConfig

OBJECT_USER_ROLE = "roles/storage.objectUser"


def workload_identity_principal(project_number: str, project: str, namespace: str, service_account: str) -> str:
    """The IAM principal of a Kubernetes service account: no Google service account, no keys."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{project}.svc.id.goog/subject/ns/{namespace}/sa/{service_account}"
    )


class Storage(pulumi.ComponentResource):
    bucket: gcp.storage.Bucket
    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount

    def __init__(
        self, name: str, config: StackConfig, provider: k8s.Provider, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("trainyard:infra:Storage", name, None, opts)
        storage = config.storage
        self.bucket = gcp.storage.Bucket(
            storage.bucket,
            name=storage.bucket,
            location=config.bucket_location,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            force_destroy=storage.delete_with_stack,
            # Checkpoints and datasets outlive `pulumi destroy` unless the config says otherwise.
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=not storage.delete_with_stack),
        )
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            storage.namespace,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=storage.namespace),
            opts=k8s_opts,
        )
        self.service_account = k8s.core.v1.ServiceAccount(
            storage.service_account,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=storage.service_account, namespace=self.namespace.metadata.name),
            opts=k8s_opts,
        )
        project_number = gcp.organizations.get_project_output(project_id=config.project).number
        gcp.storage.BucketIAMMember(
            f"{storage.bucket}-workload-object-user",
            bucket=self.bucket.name,
            role=OBJECT_USER_ROLE,
            member=project_number.apply(
                lambda number: workload_identity_principal(
                    number, config.project, storage.namespace, storage.service_account
                )
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"bucket": self.bucket.name, "namespace": self.namespace.metadata.name})
