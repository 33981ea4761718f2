"""GCP's own rules for the names the stack creates, checked before `pulumi up` instead of by the API.

Each function returns why a name is refused (a phrase that fits after the value), or None when it is fine.
Sources:
- buckets: https://cloud.google.com/storage/docs/buckets#naming
- clusters: the GKE API's `Cluster.name` (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters):
  at most 40 characters, lowercase letters, digits and '-', starting with a letter, ending alphanumeric;
- node pools: the API's pattern `[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?`, quoted in pulumi/pulumi-gcp#1510;
- networks, subnetworks, firewall rules: Compute Engine resource names, RFC 1035, 1 to 63 characters
  (https://cloud.google.com/compute/docs/naming-resources);
- service accounts: account IDs of 6 to 30 lowercase letters, digits and '-', starting with a letter and ending
  alphanumeric (https://cloud.google.com/iam/docs/service-accounts-create#creating).
"""

from __future__ import annotations

import hashlib
import re

CLUSTER_NAME_MAX = 40
NODE_POOL_NAME_MAX = 40
COMPUTE_NAME_MAX = 63
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_BUCKET_CHARACTERS = re.compile(r"^[a-z0-9._-]+$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
# "google" and close misspellings such as "g00gle": digits read as the letters they look like.
_LOOKALIKES = str.maketrans({"0": "o", "1": "l", "3": "e"})
_GOOGLE_LIKE = re.compile(r"g+o{2,}g+l+e|go{2,}gel|gogle")

BUCKET_RULES = (
    "3-63 characters (up to 222 with dots, 63 between dots) of lowercase letters, digits, '-', '_' and '.', "
    "starting and ending with a letter or digit; not an IP address; not starting with 'goog'; without "
    "'google' or close misspellings"
)


def bucket_name_problem(name: str) -> str | None:
    if "." in name:
        if len(name) > 222:
            return f"has {len(name)} characters"
        if bad := [part for part in name.split(".") if not 1 <= len(part) <= 63]:
            return f"has a part of {len(bad[0])} characters between dots"
    if "." not in name and not 3 <= len(name) <= 63:
        return f"has {len(name)} characters"
    if not _BUCKET_CHARACTERS.match(name):
        return "has characters GCS refuses"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "does not start and end with a letter or digit"
    if _IPV4.match(name):
        return "is an IP address"
    if name.startswith("goog"):
        return "starts with 'goog'"
    if _GOOGLE_LIKE.search(name.translate(_LOOKALIKES)):
        return "contains 'google' or a close misspelling"
    return None


def rfc1035_problem(name: str, longest: int) -> str | None:
    """Names of clusters, node pools and Compute Engine resources: a lowercase RFC 1035 label."""
    if len(name) > longest:
        return f"has {len(name)} characters, more than {longest}"
    if not _RFC1035.match(name):
        return "is not lowercase letters, digits and '-', starting with a letter and ending with a letter or digit"
    return None


SERVICE_ACCOUNT_ID_MAX = 30


def service_account_id(prefix: str, role: str) -> str:
    """`<prefix>-<role>`, the prefix cut (with a hash of it kept) when the whole would pass 30 characters."""
    name = f"{prefix}-{role}"
    if len(name) <= SERVICE_ACCOUNT_ID_MAX:
        return name
    digest = hashlib.sha256(prefix.encode()).hexdigest()[:4]
    room = SERVICE_ACCOUNT_ID_MAX - len(role) - len(digest) - 2
    return f"{prefix[:room].rstrip('-')}-{digest}-{role}"


def compute_name(*parts: str) -> str:
    """A Compute Engine name of `parts` joined by '-', cut to 63 characters with a hash of the whole kept when longer,
    so two long names stay apart."""
    name = "-".join(parts)
    if len(name) <= COMPUTE_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{name[: COMPUTE_NAME_MAX - len(digest) - 1].rstrip('-')}-{digest}"
