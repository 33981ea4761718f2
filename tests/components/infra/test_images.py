"""The trainers' images: the stack's registry, one content-tagged build per trainer, pods on tag@digest."""

from __future__ import annotations

from components.facts.images import IMAGE_BUILD_TYPE, REPOSITORY_TYPE, TRAINERS, pin_problem
from components.infra.images import build_tag, source_tag
from components.infra.source_tree import deployed_files, local_only_paths, trainer_paths
from tests.helpers.plans import PROJECT_DIR, everything_on, manifest, one
from tests.helpers.trainer_repo import commit, commit_tiny_trainers

REGISTRY = "us-east5-docker.pkg.dev/trainyard-dev/trainyard"
CACHE = "us-east5-docker.pkg.dev/trainyard-dev/trainyard-cache"
REPOSITORY_GRANT = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
DEPLOY = "serviceAccount:trainyard-deploy@trainyard-dev.iam.gserviceaccount.com"
DIGEST_REF = f"example.com/team/fsdp:1.0@sha256:{'a' * 64}"


def builds(plan) -> dict[str, dict]:
    return {r.name: r.inputs for r in plan.resources if r.type == IMAGE_BUILD_TYPE}


def container_images(value) -> list[str]:
    """Every container image in a manifest, at any depth (pod templates, Ray groups, init containers)."""
    if isinstance(value, dict):
        found = [value["image"]] if isinstance(value.get("image"), str) and "name" in value else []
        return found + [image for item in value.values() for image in container_images(item)]
    if isinstance(value, list):
        return [image for item in value for image in container_images(item)]
    return []


def test_the_dev_plan_builds_each_trainer_into_the_stacks_registry(dev_plan):
    repository = one(dev_plan, REPOSITORY_TYPE, "registry")
    expected = {"project": "trainyard-dev", "location": "us-east5", "repositoryId": "trainyard", "format": "DOCKER"}
    assert {key: repository[key] for key in expected} == expected
    assert repository["dockerConfig"] == {"immutableTags": True}
    for trainer in TRAINERS:
        image = builds(dev_plan)[f"image-{trainer}"]
        cache = f"{CACHE}/{trainer}:buildcache"
        assert image["context"] == {"location": "."}
        assert image["dockerfile"] == {"location": f"workloads/{trainer}/Dockerfile"}
        assert image["tags"] == [f"{REGISTRY}/{trainer}:{build_tag(trainer, cache)}"]
        assert image["push"] is True and image["buildOnPreview"] is False
        assert image["cacheFrom"] == [{"registry": {"ref": cache}}]
        assert image["cacheTo"][0]["registry"]["ref"] == cache


def grants_on(plan, repository_id: str) -> set[tuple[str, str]]:
    return {
        (r.inputs["role"], r.inputs["member"])
        for r in plan.resources
        if r.type == REPOSITORY_GRANT and r.inputs["repository"] == repository_id
    }


def test_only_the_deploy_account_writes_the_build_cache_and_nodes_read_the_images(dev_plan):
    cache = one(dev_plan, REPOSITORY_TYPE, "build-cache")
    assert (cache["repositoryId"], cache["format"], cache.get("dockerConfig")) == ("trainyard-cache", "DOCKER", None)
    assert grants_on(dev_plan, "trainyard-cache") == {("roles/artifactregistry.writer", DEPLOY)}
    image_grants = grants_on(dev_plan, "trainyard")
    assert image_grants and {role for role, _ in image_grants} == {"roles/artifactregistry.reader"}
    assert all(member.startswith("serviceAccount:") and member != DEPLOY for _, member in image_grants)


def test_a_tag_follows_the_build_settings_so_a_rebuild_never_moves_one():
    cache = f"{CACHE}/fsdp:buildcache"
    assert build_tag("fsdp", cache) == build_tag("fsdp", cache) != build_tag("fsdp", f"{REGISTRY}/fsdp:buildcache")
    assert build_tag("fsdp", cache) != build_tag("maxtext", f"{CACHE}/maxtext:buildcache")


def test_pods_run_the_built_images_by_digest(dev_plan):
    fsdp_tag = builds(dev_plan)["image-fsdp"]["tags"][0]
    maxtext_tag = builds(dev_plan)["image-maxtext"]["tags"][0]
    (trainer,) = manifest(dev_plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]["containers"]
    assert trainer["image"].startswith(f"{fsdp_tag}@sha256:")
    cluster = manifest(dev_plan, "RayJob", "llama3-8b")["spec"]["rayClusterSpec"]
    ray_images = set(container_images(cluster))
    assert len(ray_images) == 1 and ray_images.pop().startswith(f"{maxtext_tag}@sha256:")


def test_no_image_in_any_plan_moves(dev_plan, plan_with):
    everything = plan_with(everything_on)
    for plan in (dev_plan, everything):
        images = [image for item in plan.manifests for image in container_images(item)]
        assert images and [image for image in images if pin_problem(image)] == []


def test_the_registry_follows_the_project(plan_with):
    plan = plan_with(lambda values: values.update({"gcp:project": "team-ml-prod"}))
    tags = [tag for image in builds(plan).values() for tag in image["tags"]]
    assert len(tags) == 2 and all(tag.startswith("us-east5-docker.pkg.dev/team-ml-prod/trainyard/") for tag in tags)
    deploy = "serviceAccount:trainyard-deploy@team-ml-prod.iam.gserviceaccount.com"
    assert grants_on(plan, "trainyard-cache") == {("roles/artifactregistry.writer", deploy)}


def test_a_prebuilt_image_is_used_as_named_and_not_built(plan_with):
    plan = plan_with(lambda values: values.update({"trainyard:images": {"fsdp": DIGEST_REF}}))
    assert set(builds(plan)) == {"image-maxtext"}
    (trainer,) = manifest(plan, "Job", "llama31-70b-fsdp")["spec"]["template"]["spec"]["containers"]
    assert trainer["image"] == DIGEST_REF
    both = plan_with(lambda values: values.update({"trainyard:images": {"fsdp": DIGEST_REF, "maxtext": "r/ray:2.1"}}))
    assert builds(both) == {} and not [r for r in both.resources if r.type == REPOSITORY_TYPE]


def test_each_dockerignore_admits_exactly_what_the_tag_hashes():
    for trainer in TRAINERS:
        lines = (PROJECT_DIR / "workloads" / trainer / "Dockerfile.dockerignore").read_text().splitlines()
        admitted, local_only = trainer_paths(trainer), local_only_paths(trainer)
        rules = lines[lines.index("*") + 1 :]
        assert rules[: len(admitted) + len(local_only)] == [*(f"!{p}" for p in admitted), *local_only]


def test_docs_make_fragments_and_local_stand_ins_roll_no_image(tmp_path):
    commit_tiny_trainers(tmp_path)
    before = {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS}
    for name in (
        "workloads/fsdp/README.md",
        "workloads/fsdp/fsdp.mk",
        "workloads/fsdp/tiny.py",
        "workloads/maxtext/local.py",
    ):
        (tmp_path / name).write_text("# a typo fixed\n")
    commit(tmp_path, "docs")
    assert {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS} == before
    assert "workloads/fsdp/README.md" not in deployed_files(tmp_path, "fsdp")
    assert deployed_files(tmp_path, "fsdp") == ["workloads/__init__.py", "workloads/fsdp/train.py"]


def test_a_tag_changes_with_its_trainers_tracked_files_only(tmp_path):
    commit_tiny_trainers(tmp_path)
    before = {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS}
    (tmp_path / "workloads/fsdp/scratch.py").write_text("untracked\n")
    assert {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS} == before
    (tmp_path / "workloads/fsdp/train.py").write_text("# changed\n")
    after = {trainer: source_tag(trainer, tmp_path) for trainer in TRAINERS}
    assert after["maxtext"] == before["maxtext"] and after["fsdp"] != before["fsdp"]
    (tmp_path / "workloads/__init__.py").write_text("# shared\n")
    assert all(source_tag(trainer, tmp_path) != after[trainer] for trainer in TRAINERS)
