"""`trainyard job submit`: a job file is rendered by the stack's own builders and judged by its own checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from runs import submit
from tests.helpers.plans import PROJECT_DIR, dev_config_values

DIGEST = "us-east5-docker.pkg.dev/trainyard-dev/trainyard/maxtext@sha256:" + "a" * 64


def job_file(tmp_path: Path, kind: str, entry: dict) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({"kind": kind, **entry}, sort_keys=False))
    return path


def without_identity(manifest: dict, name: str, stack_name: str) -> dict:
    """The object bar its name and labels, with the job's name written as the stack job's."""
    shown = copy.deepcopy(manifest)
    shown["metadata"].pop("name")
    shown["metadata"].pop("labels")
    return json.loads(json.dumps(shown).replace(name, stack_name))


@pytest.fixture(scope="module")
def copy_of_dev_maxtext(tmp_path_factory) -> submit.Rendered:
    entry = {**dev_config_values()["trainyard:jobs"]["maxtext"][0], "name": "llama3-8b-copy"}
    entry.pop("enabled")
    path = job_file(tmp_path_factory.mktemp("job"), "maxtext", entry)
    return submit.render(submit.read_job_file(path), "dev", PROJECT_DIR)


def test_a_job_file_equal_to_the_stacks_job_renders_the_stacks_objects_and_verdicts(copy_of_dev_maxtext, dev_plan):
    rendered = copy_of_dev_maxtext
    (rayjob,) = [m for m in rendered.objects if m["kind"] == "RayJob"]
    (stack_rayjob,) = [m for m in dev_plan.manifests if m["kind"] == "RayJob"]
    assert rayjob["metadata"]["labels"][submit.SUBMITTED_LABEL] == submit.SUBMITTED_BY
    assert rayjob["metadata"]["name"].startswith("llama3-8b-copy-")
    assert without_identity(rayjob, "llama3-8b-copy", "llama3-8b") == without_identity(
        stack_rayjob, "llama3-8b", "llama3-8b"
    )
    # the code ConfigMap the RayJob mounts travels with it
    (config_map,) = [m for m in rendered.objects if m["kind"] == "ConfigMap"]
    assert config_map in dev_plan.manifests
    assert rendered.problems == []
    admitted = [note for note in rendered.notes if "admitted on" in note]
    assert admitted == [
        (
            f"RayJob trainyard/{rayjob['metadata']['name']}: admitted on system (head), v6e-16 (v6e-16), "
            "system (submitter)"
        )
    ]


def test_a_refused_job_names_the_job_files_key(tmp_path):
    entry = {"name": "bad", "slices": "v7x-64", "modelName": "llama3-8b", "steps": 10, "perDeviceBatchSize": 1}
    path = job_file(tmp_path, "maxtext", {**entry, "maxTargetLength": 1024})
    with pytest.raises(submit.JobFileError) as error:
        submit.render(submit.read_job_file(path), "dev", PROJECT_DIR)
    assert str(error.value).startswith(f'{path}: slices: "v7x-64" is not a trainyard:tpuSlices name (allowed: v6e-16)')


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kind: torch\nname: x\n", 'kind: "torch" is not a job kind (allowed: maxtext, fsdp)'),
        ("- kind: fsdp\n", "holds a list (allowed: one job"),
        ("kind: fsdp\nname: [\n", "job.yaml:3: is not YAML"),
    ],
)
def test_a_job_file_that_is_not_one_job_is_one_line(tmp_path, text, says):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(submit.JobFileError, match=None) as error:
        submit.read_job_file(path)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_the_image_is_pinned_by_digest_in_every_trainer_container(copy_of_dev_maxtext):
    objects = copy.deepcopy(copy_of_dev_maxtext.objects)
    assert submit.pin_image(objects, "maxtext", DIGEST) == 2  # the head and the v6e-16 worker group
    (rayjob,) = [m for m in objects if m["kind"] == "RayJob"]
    cluster = rayjob["spec"]["rayClusterSpec"]
    templates = [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]
    assert {c["image"] for t in templates for c in t["spec"]["containers"]} == {DIGEST}
    with pytest.raises(submit.JobFileError, match="is not pinned by digest"):
        submit.pin_image(objects, "maxtext", "us-docker.pkg.dev/x/maxtext:latest")


def test_a_multi_node_fsdp_job_brings_its_rendezvous_service_and_compute_domain(tmp_path):
    """What its pods name that the stack makes for that job alone travels with it, before it: the headless
    Service its subdomain names, and on A4X the ComputeDomain whose channel it claims."""
    values = yaml.safe_load((PROJECT_DIR / "Pulumi.a4x.yaml").read_text())["config"]
    entry = {**values["trainyard:jobs"]["fsdp"][0], "name": "ft-two"}
    path = job_file(tmp_path, "fsdp", entry)
    rendered = submit.render(submit.read_job_file(path), "a4x", PROJECT_DIR)
    kinds = [(m["kind"], m["metadata"]["name"]) for m in rendered.objects]
    assert kinds[1:] == [("Service", "ft-two"), ("ComputeDomain", "ft-two-nvlink"), ("Job", kinds[-1][1])]
    assert kinds[0][0] == "ConfigMap" and kinds[-1][1].startswith("ft-two-")
    assert [m["kind"] for m in rendered.owned] == ["Service", "ComputeDomain"]  # not the shared code ConfigMap
    assert rendered.job_object["kind"] == "Job"
    (job,) = [m for m in rendered.objects if m["kind"] == "Job"]
    assert job["spec"]["template"]["spec"]["subdomain"] == "ft-two"
    assert [note for note in rendered.notes if "admitted on" in note] == [
        f"Job trainyard/{kinds[-1][1]}: admitted on a4x (main)"
    ]
