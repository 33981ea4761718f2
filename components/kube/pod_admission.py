"""A ValidatingAdmissionPolicy for every pod of the workloads' namespace, including those created at run time.

The policy pack checks the pods the program declares; KubeRay's head, workers and submitter, a `kubectl apply` or
a job's own pods are created later, where no pack runs. The API server holds them to the pack's privilege and
host-access rules (policies/: privileged-only-where-allowed, host-access-only-where-allowed and the pod rules): no
privileged container, no explicit privilege escalation, no added capability, no unconfined seccomp, no uid 0 asked
for, no host namespace or host port, and host paths only the driver and gIB library folders the FSDP trainer reads,
mounted read-only. Nothing of the namespace needs more (the NCCL installer runs in kube-system).

admissionregistration.k8s.io/v1 is GA from Kubernetes 1.30; trainyard's clusters run 1.33 or later. The CEL uses
only the standard macros (has, all, exists), so tests evaluate it with a CEL interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.facts.gke import NAMESPACE_NAME_LABEL
from components.facts.host_workloads import READ_ONLY_HOST_PATHS as ALLOWED_HOST_PATHS


def _every_container(predicate: str) -> str:
    """`predicate` (on `c`) holds for every container, init container and ephemeral container. One list at a time:
    the API server types Container and EphemeralContainer apart, and `+` of the two lists would not compile."""
    optional = (
        f"(!has(object.spec.{containers}) || object.spec.{containers}.all(c, {predicate}))"
        for containers in ("initContainers", "ephemeralContainers")
    )
    return " && ".join([f"object.spec.containers.all(c, {predicate})", *optional])


def _context_never(field: str, condition: str) -> str:
    """Every container's securityContext.<field> is absent or does not meet `condition` (on `value`)."""
    value = f"c.securityContext.{field}"
    return _every_container(f"!has(c.securityContext) || !has({value}) || !({condition.format(value=value)})")


def _pod_context_never(field: str, condition: str) -> str:
    value = f"object.spec.securityContext.{field}"
    return f"!has(object.spec.securityContext) || !has({value}) || !({condition.format(value=value)})"


def _host_paths_allowed(paths: Sequence[str]) -> str:
    listed = ", ".join(f"'{path}'" for path in paths)
    read_only = _every_container(
        "!has(c.volumeMounts) || c.volumeMounts.all(m, m.name != v.name || (has(m.readOnly) && m.readOnly))"
    )
    allowed = f"v.hostPath.path in [{listed}] && ({read_only})"
    return f"!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath) || ({allowed}))"


def validations(host_paths: Sequence[str] = ALLOWED_HOST_PATHS) -> list[dict[str, str]]:
    """The rules as admissionregistration.k8s.io/v1 validations (expression, message)."""
    paths = ", ".join(host_paths)
    rules = [
        (_context_never("privileged", "{value}"), "no privileged container"),
        (_context_never("allowPrivilegeEscalation", "{value}"), "no container with allowPrivilegeEscalation: true"),
        (
            _context_never("capabilities", "has({value}.add) && {value}.add.size() > 0"),
            "no container that adds Linux capabilities",
        ),
        (
            _both(
                _context_never("seccompProfile", "{value}.type == 'Unconfined'"),
                _pod_context_never("seccompProfile", "{value}.type == 'Unconfined'"),
            ),
            "no Unconfined seccomp profile",
        ),
        (
            _both(_context_never("runAsUser", "{value} == 0"), _pod_context_never("runAsUser", "{value} == 0")),
            "no runAsUser: 0",
        ),
        (
            " && ".join(
                f"!(has(object.spec.{field}) && object.spec.{field})" for field in ("hostNetwork", "hostPID", "hostIPC")
            ),
            "no host network, PID or IPC namespace",
        ),
        (
            _every_container("!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0)"),
            "no hostPort",
        ),
        (_host_paths_allowed(host_paths), f"host paths only {paths}, and only mounted read-only"),
    ]
    return [{"expression": expression, "message": f"trainyard workloads: {message}"} for expression, message in rules]


def _both(first: str, second: str) -> str:
    return f"({first}) && ({second})"


@dataclass(frozen=True)
class WorkloadPodAdmissionArgs:
    namespace: pulumi.Input[str]  # the workloads' namespace: the binding selects it by its name label
    provider: k8s.Provider


class WorkloadPodAdmission(pulumi.ComponentResource):
    def __init__(self, name: str, args: WorkloadPodAdmissionArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("trainyard:k8s:WorkloadPodAdmission", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        policy_name = pulumi.Output.concat(args.namespace, "-workload-pods")
        self.policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            "validatingadmissionpolicy-workload-pods",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
            spec={
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["pods", "pods/ephemeralcontainers"],
                        }
                    ]
                },
                "validations": validations(),
            },
            opts=child,
        )
        self.binding = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            "validatingadmissionpolicybinding-workload-pods",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
            spec={
                "policyName": self.policy.metadata.name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: args.namespace}}},
            },
            opts=child,
        )
        self.register_outputs({"policy": self.policy.metadata.name})
