"""Stack rule about Dynamic Resource Allocation: every claim a pod makes names a template that will exist.

Reads ``args.resources`` (every resource of the stack, engine-shaped) and reports with the URN of the workload.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from components.facts import nvidia_dra
from policies.props import has_unknown, is_unknown, items, lookup, plain
from policies.workloads import kind_of, namespace_of, object_name, pod_templates

# What says which templates will exist: the templates, the ComputeDomains, and (by name) the driver's controller.
TEMPLATE_MAKERS = ("ResourceClaimTemplate", nvidia_dra.COMPUTE_DOMAIN_KIND, "Deployment")


def pod_claims_name_a_template(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Each pod's resource claim names a ResourceClaimTemplate of the stack, or one a ComputeDomain of the stack
    has NVIDIA's DRA driver make.

    The scheduler holds a pod whose claim template does not exist, and Kueue admits no workload whose template it
    cannot read ("failed to get claim spec for ResourceClaimTemplate <name> in podset <podset>", Kueue v0.19.2
    pkg/dra/claims.go): the job waits in its queue for good. A ComputeDomain's
    channel template exists only where the driver's controller runs (components/facts/nvidia_dra.py), in the
    ComputeDomain's namespace.
    """
    objects = [{"kind": kind_of(r.resource_type), **plain(r.props)} for r in args.resources if kind_of(r.resource_type)]
    makers = [o for o in objects if o["kind"] in TEMPLATE_MAKERS]
    if any(has_unknown(o if o["kind"] != "Deployment" else o.get("metadata")) for o in makers):
        return  # judged once the preview knows them
    templates = nvidia_dra.claim_templates(objects)
    for resource in args.resources:
        kind = kind_of(resource.resource_type)
        if kind is None:
            continue
        if is_unknown(lookup(resource.props, "metadata.namespace")):
            continue
        namespace = namespace_of(resource.props)
        for template in pod_templates(kind, resource.props):
            for claim in items(template.spec, "resourceClaims"):
                name = lookup(claim, "resourceClaimTemplateName")
                if not isinstance(name, str) or is_unknown(name) or (namespace, name) in templates:
                    continue
                report_violation(
                    f"{kind} '{namespace}/{object_name(resource.props, resource.name)}' {template.where}: claim "
                    f"'{lookup(claim, 'name')}' names ResourceClaimTemplate '{name}', which the stack neither makes "
                    "nor has a ComputeDomain make (with NVIDIA's DRA driver); Kueue would not admit it.",
                    resource.urn,
                )
