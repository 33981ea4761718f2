"""Options for GCP resources with a fixed name.

GCP names are unique per project (and location): a replacement created beside the resource it replaces fails
with "already exists". So a fixed-name resource is deleted before its replacement is created; the PR diff
says what is down meanwhile.
"""

from __future__ import annotations

import pulumi


def fixed_name_options(parent: pulumi.Resource, **options: object) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent, delete_before_replace=True, **options)
