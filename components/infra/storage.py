"""The datasets-and-checkpoints bucket, and its grant to the workloads' Kubernetes service account.

One grant serves every job, so a job can delete or overwrite another's checkpoints; the bucket's soft-delete policy,
set here rather than left to GCS's default, keeps every deleted or overwritten object restorable for
`storage.softDeleteDays` (docs/security.md: checkpoints against a compromised job).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.facts.hardening import STORAGE_SERVICE
from components.infra.audit_logs import data_access_logs

OBJECT_USER_ROLE = "roles/storage.objectUser"
SECONDS_PER_DAY = 86_400


def workload_identity_principal(project_number: str, project: str, namespace: str, service_account: str) -> str:
    """The IAM principal of a Kubernetes service account: no Google service account, no keys."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{project}.svc.id.goog/subject/ns/{namespace}/sa/{service_account}"
    )


@dataclass(frozen=True)
class StorageArgs:
    project: str
    bucket_name: str
    location: str
    delete_with_stack: bool  # else the bucket outlives `pulumi destroy`
    adopt: bool  # import a bucket a destroyed stack kept
    namespace: str  # the workloads' Kubernetes namespace and service account, granted the bucket
    service_account: str
    soft_delete_days: int  # deleted and overwritten objects stay restorable this long
    data_access_logs: bool  # the project's Cloud Storage reads and writes are audit-logged


class Storage(pulumi.ComponentResource):
    bucket: gcp.storage.Bucket

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:infra:Storage", name, None, opts)
        bucket_name = args.bucket_name
        self.bucket = gcp.storage.Bucket(
            bucket_name,
            name=bucket_name,
            location=args.location,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            force_destroy=args.delete_with_stack,
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                retention_duration_seconds=args.soft_delete_days * SECONDS_PER_DAY
            ),
            # Checkpoints and datasets outlive `pulumi destroy` unless the config says otherwise; a later stack
            # on the same name adopts the kept bucket (a create would fail: the name is taken).
            opts=pulumi.ResourceOptions(
                parent=self,
                retain_on_delete=not args.delete_with_stack,
                import_=bucket_name if args.adopt else None,
            ),
        )
        project_number = gcp.organizations.get_project_output(project_id=args.project).number
        gcp.storage.BucketIAMMember(
            f"{bucket_name}-workload-object-user",
            bucket=self.bucket.name,
            role=OBJECT_USER_ROLE,
            member=project_number.apply(
                lambda number: workload_identity_principal(number, args.project, args.namespace, args.service_account)
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        if args.data_access_logs:
            data_access_logs(f"{bucket_name}-storage-data-access", args.project, STORAGE_SERVICE, self)
        self.register_outputs({"bucket": self.bucket.name})
