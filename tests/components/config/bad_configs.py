"""Bad stack configs and what the loader must say about each: the key path, the value as written, the rule."""

from __future__ import annotations


def _set(*path_and_value):
    """An edit that sets values[path...] = value (creating nothing: the path must exist or be a leaf)."""
    *path, value = path_and_value

    def edit(values):
        target = values
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _add_slice(**fields):
    return lambda values: values["trainyard:tpuSlices"].append({"name": "extra", "topology": "2x2", **fields})


def _delete(key):
    return lambda values: values.pop(key)


BAD_CONFIGS = [
    # (edit, key path in the message, value in the message, words of the rule)
    (
        _set("trainyard:jobs", "maxtext", 0, "perDeviceBatchSize", float("inf")),  # YAML's .inf
        "trainyard:jobs.maxtext[0].perDeviceBatchSize",
        "Infinity",
        "is not allowed (input should be a finite number)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "modelName", "llama3-9b"),
        "trainyard:jobs.maxtext[0].modelName",
        '"llama3-9b"',
        "is not a model of MaxText 0.2.5, whose config refuses it at start (allowed: llama3-8b",
    ),
    (  # a yml MaxText ships, but not a model_name its config accepts
        _set("trainyard:jobs", "maxtext", 0, "modelName", "llama3-405b"),
        "trainyard:jobs.maxtext[0].modelName",
        '"llama3-405b"',
        "whose config refuses it at start (allowed: llama3.1-405b, llama3-70b",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"gradient_clipping_treshold": "1.0"}),
        "trainyard:jobs.maxtext[0].extraArgs.gradient_clipping_treshold",
        '"1.0"',
        "is not a setting of MaxText 0.2.5, which refuses it at start (allowed: gradient_clipping_threshold or another",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"learning_rate": "3e-4x"}),
        "trainyard:jobs.maxtext[0].extraArgs.learning_rate",
        '"3e-4x"',
        "is refused by MaxText 0.2.5: Input should be a valid number, unable to parse string as a number (allowed: a",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"opt_type": "adam"}),
        "trainyard:jobs.maxtext[0].extraArgs.opt_type",
        '"adam"',
        "is refused by MaxText 0.2.5: Input should be 'adamw'",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"enable_goodput_recording": "[true"}),
        "trainyard:jobs.maxtext[0].extraArgs.enable_goodput_recording",
        '"[true"',
        "is not a value MaxText can read: while parsing a flow sequence (allowed: true or false)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"base_num_decoder_layers": "8"}),
        "trainyard:jobs.maxtext[0].extraArgs.base_num_decoder_layers",
        '"8"',
        "differs from model llama3-8b's config (32), which MaxText refuses unless override_model_config is true",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "datasetType", "hf"),
        "trainyard:jobs.maxtext[0].extraArgs.hf_path",
        "",
        'is unset, and MaxText refuses it at start: "hf_path can\'t be empty when dataset_type=hf"',
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "datasetType", "grain"),
        "trainyard:jobs.maxtext[0].extraArgs.grain_train_files",
        "",
        'MaxText refuses it at start: "When dataset_type=grain, set grain_train_files, ',
    ),
    (
        _add_slice(topology="4x3"),
        "trainyard:tpuSlices[1].topology",
        '"4x3"',
        "is not a v6e topology (allowed: 1x1, 2x2, 2x4, 4x4",
    ),
    (
        _set("trainyard:tpuSlices", 0, "generation", "v9"),
        "trainyard:tpuSlices[0].generation",
        '"v9"',
        "not a supported TPU generation",
    ),
    (
        _set("trainyard:tpuSlices", 0, "machineType", "ct6e-standard-8t"),
        "trainyard:tpuSlices[0].machineType",
        '"ct6e-standard-8t"',
        "cannot form a v6e 4x4 slice (allowed: ct6e-standard-4t)",
    ),
    (
        _set("trainyard:tpuSlices", 0, "capacity", "dwsQueued"),
        "trainyard:tpuSlices[0].capacity",
        '"dwsQueued"',
        "rejects TPU flex-start pools with queued provisioning",
    ),
    (
        _set("trainyard:tpuSlices", 0, "capacity", "reservation"),
        "trainyard:tpuSlices[0].reservation",
        "",
        'is required when capacity is "reservation"',
    ),
    (
        _set("trainyard:tpuSlices", 0, "reservation", "my-res"),
        "trainyard:tpuSlices[0].reservation",
        '"my-res"',
        'only allowed with capacity "reservation"',
    ),
    (_set("trainyard:tpuSlices", 0, "count", 0), "trainyard:tpuSlices[0].count", "0", "out of range (allowed: >= 1)"),
    (
        _set("trainyard:tpuSlices", 0, "topolgy", "4x4"),
        "trainyard:tpuSlices[0].topolgy",
        "",
        "not a known key (did you mean topology? allowed: name, generation, topology",
    ),
    (_set("trainyard:network", "mtu", 9000), "trainyard:network.mtu", "9000", "out of range (allowed: 1300 to 8896)"),
    (_set("trainyard:network", "mtu", "big"), "trainyard:network.mtu", '"big"', "is not allowed"),
    (
        _set("trainyard:network", "podRange", "10.50.0.0/19"),
        "trainyard:network.dcnRanges[0]",
        '"10.50.0.0/16"',
        "overlaps trainyard:network.podRange 10.50.0.0/19",
    ),
    (
        _set("trainyard:network", "gvnicRange", "192.168.1.0/24"),
        "trainyard:network.rdmaRanges[0]",
        '"192.168.1.0/24"',
        "overlaps trainyard:network.gvnicRange",
    ),
    (
        _set("trainyard:network", "nodeRange", "10.0.0.1/20"),
        "trainyard:network.nodeRange",
        '"10.0.0.1/20"',
        "is not allowed",
    ),
    (
        _set("trainyard:network", "rdmaRanges", ["192.168.1.0/24"]),
        "trainyard:network.rdmaRanges",
        '["192.168.1.0/24"]',
        "allowed: exactly 8, one per RDMA NIC",
    ),
    (
        _set("trainyard:network", "podRange", "10.64.0.0/21"),
        "trainyard:network.podRange",
        '"10.64.0.0/21"',
        "holds 8 nodes but the pools can reach 23 (allowed: /19 or larger)",
    ),
    (
        _set("trainyard:gpuPools", 0, "capacity", "dws"),
        "trainyard:gpuPools[0].capacity",
        '"dws"',
        "allowed: dwsQueued, flexStart, spot, onDemand, reservation",
    ),
    (
        _set("trainyard:gpuPools", 0, "machineType", "a3-highgpu-8g"),
        "trainyard:gpuPools[0].machineType",
        '"a3-highgpu-8g"',
        "not a supported GPU machine type (allowed: a4-highgpu-8g, a4x-highgpu-4g)",
    ),
    (
        _set("trainyard:gpuPools", 0, "minNodes", 2),
        "trainyard:gpuPools[0].minNodes",
        "2",
        'not allowed with capacity "dwsQueued": flex-start pools scale from 0',
    ),
    (
        _set("trainyard:gpuPools", 0, "maxNodes", 0),
        "trainyard:gpuPools[0].maxNodes",
        "0",
        "out of range (allowed: >= 1)",
    ),
    (
        _set("trainyard:gpuPools", 0, "name", "v6e-16-1"),
        "trainyard:gpuPools[0].name",
        '"v6e-16-1"',
        "already used by trainyard:tpuSlices[0].name",
    ),
    (
        _set("trainyard:gpuPools", 0, "gpuDriverVersion", "555"),
        "trainyard:gpuPools[0].gpuDriverVersion",
        '"555"',
        "allowed: DEFAULT, LATEST, INSTALLATION_DISABLED",
    ),
    (
        _set("trainyard:gpuPools", 0, "driverVersion", "570.133.20"),
        "trainyard:gpuPools[0].driverVersion",
        '"570.133.20"',
        "is too old for the gIB plugin v1.1.2 on every node, which needs 580.95.05 or newer, and for the FSDP "
        + "image's torch 2.14.1 (CUDA 13.0), which needs 580 or newer (allowed: 580.95.05 or newer)",
    ),
    (
        _set("trainyard:gpuPools", 0, "driverVersion", "580.65.06"),
        "trainyard:gpuPools[0].driverVersion",
        '"580.65.06"',
        "is too old for the gIB plugin v1.1.2 on every node, which needs 580.95.05 or newer (allowed: 580.95.05",
    ),
    (
        _set("trainyard:gpuPools", 0, "driverVersion", "580"),
        "trainyard:gpuPools[0].driverVersion",
        '"580"',
        "allowed: an NVIDIA driver version such as 580.95.05",
    ),
    (
        _set("trainyard:cluster", "releaseChannel", "FAST"),
        "trainyard:cluster.releaseChannel",
        '"FAST"',
        "allowed: RAPID, REGULAR, STABLE, EXTENDED, UNSPECIFIED",
    ),
    (
        _set("trainyard:cluster", "version", "1.33"),
        "trainyard:cluster.version",
        '"1.33"',
        "too old: DRANET and resource.k8s.io/v1 need it (allowed: 1.34 or newer)",
    ),
    (_set("trainyard:cluster", "name", "Trainyard_Dev"), "trainyard:cluster.name", '"Trainyard_Dev"', "is not allowed"),
    (_set("trainyard:zone", "europe-west4-a"), "trainyard:zone", '"europe-west4-a"', "is not in gcp:region us-east5"),
    (
        _set("trainyard:storage", "bucket", "UPPER"),
        "trainyard:storage.bucket",
        '"UPPER"',
        "has characters GCS refuses (allowed: 3-63",
    ),
    (
        _set("trainyard:storage", "bucket", "goog-trainyard-data"),
        "trainyard:storage.bucket",
        '"goog-trainyard-data"',
        "starts with 'goog'",
    ),
    (
        _set("trainyard:storage", "bucket", "my-google-data"),
        "trainyard:storage.bucket",
        '"my-google-data"',
        "contains 'google' or a close misspelling",
    ),
    (
        _set("trainyard:storage", "bucket", "my-g00gle-data"),
        "trainyard:storage.bucket",
        '"my-g00gle-data"',
        "contains 'google' or a close misspelling",
    ),
    (
        _set("trainyard:storage", "bucket", "192.168.5.4"),
        "trainyard:storage.bucket",
        '"192.168.5.4"',
        "is an IP address",
    ),
    (_set("trainyard:storage", "bucket", "ab"), "trainyard:storage.bucket", '"ab"', "has 2 characters"),
    (
        _set("trainyard:storage", "bucket", "data-"),
        "trainyard:storage.bucket",
        '"data-"',
        "does not start and end with a letter or digit",
    ),
    (
        _set("trainyard:storage", "bucket", "a." + "b" * 64),
        "trainyard:storage.bucket",
        "",
        "has a part of 64 characters between dots",
    ),
    (
        _set("trainyard:cluster", "systemPool", "minNodes", 6),
        "trainyard:cluster.systemPool.minNodes",
        "6",
        "is above trainyard:cluster.systemPool.maxNodes 5 (allowed: 0 to 5)",
    ),
    (
        _set("trainyard:gpuPools", 0, "minNodes", 11),
        "trainyard:gpuPools[0].minNodes",
        "11",
        "is above trainyard:gpuPools[0].maxNodes 10",
    ),
    (
        _set("trainyard:tpuSlices", 0, "count", True),
        "trainyard:tpuSlices[0].count",
        "true",
        "a boolean is not a number",
    ),
    (_set("trainyard:network", "mtu", False), "trainyard:network.mtu", "false", "a boolean is not a number"),
    (
        _set("trainyard:storage", "namespace", "default"),
        "trainyard:storage.namespace",
        '"default"',
        "belongs to Kubernetes",
    ),
    (
        _set("trainyard:storage", "namespace", "kube-jobs"),
        "trainyard:storage.namespace",
        '"kube-jobs"',
        "belongs to Kubernetes",
    ),
    (
        _set("trainyard:storage", "namespace", "kueue-system"),
        "trainyard:storage.namespace",
        '"kueue-system"',
        "is Kueue's namespace",
    ),
    (
        _set("trainyard:kueue", "namespace", "kube-system"),
        "trainyard:kueue.namespace",
        '"kube-system"',
        "belongs to Kubernetes",
    ),
    (
        _set("trainyard:tpuSlices", 0, "name", "s" * 39),
        "trainyard:tpuSlices[0].name",
        "",
        f"gives node pool '{'s' * 39}-0', which has 41 characters, more than 40",
    ),
    (_delete("gcp:project"), "gcp:project", "", "is required but not set"),
    (
        _set("trainyard:images", {"fsdp": "us-east5-docker.pkg.dev/p/r/fsdp:latest"}),
        "trainyard:images.fsdp",
        '"us-east5-docker.pkg.dev/p/r/fsdp:latest"',
        "its tag :latest is not a version and moves; allowed: an image pinned by digest",
    ),
    (
        _set("trainyard:images", {"maxtext": "my-ray"}),
        "trainyard:images.maxtext",
        '"my-ray"',
        "it has no tag, so it means :latest",
    ),
    (
        _set("trainyard:jobs", "smoke", {"ncclImage": "nvcr.io/nvidia/pytorch:latest"}),
        "trainyard:jobs.smoke.ncclImage",
        '"nvcr.io/nvidia/pytorch:latest"',
        "not :latest and not untagged",
    ),
    (
        _set("trainyard:images", {"repository": "Trainyard"}),
        "trainyard:images.repository",
        '"Trainyard"',
        "an Artifact Registry repository ID",
    ),
    (
        _set("trainyard:cluster", "privateNodes", False),
        "trainyard:cluster.publicEndpoint",
        "false",
        "needs privateNodes: GKE closes the IP endpoint only on clusters with private nodes",
    ),
    (
        _set("trainyard:cluster", "authorizedNetworks", [{"name": "office", "cidr": "203.0.113.0/24"}]),
        "trainyard:cluster.authorizedNetworks",
        '["203.0.113.0/24"]',
        "would admit nothing: the public IP endpoint is closed",
    ),
    (
        _set("trainyard:cluster", "authorizedNetworks", [{"name": "office", "cidr": "203.0.113.0/33"}]),
        "trainyard:cluster.authorizedNetworks[0].cidr",
        '"203.0.113.0/33"',
        "is not allowed (input is not a valid IPv4 network)",
    ),
    (
        _set("trainyard:cluster", "secretsEncryptionKey", "projects/p-kms1/locations/us/keyRings/r/cryptoKeys/k"),
        "trainyard:cluster.secretsEncryptionKey",
        '"projects/p-kms1/locations/us/keyRings/r/cryptoKeys/k"',
        "is in us; GKE needs a key in the cluster's region (allowed: a key in us-east5)",
    ),
    (
        _set("trainyard:cluster", "secretsEncryptionKey", "my-key"),
        "trainyard:cluster.secretsEncryptionKey",
        '"my-key"',
        "projects/PROJECT/locations/REGION/keyRings/RING/cryptoKeys/KEY",
    ),
    (
        _set("trainyard:cluster", "bootDiskEncryptionKey", "projects/p-kms1/locations/global/keyRings/r/cryptoKeys/k"),
        "trainyard:cluster.bootDiskEncryptionKey",
        '"projects/p-kms1/locations/global/keyRings/r/cryptoKeys/k"',
        "is in global; GKE needs a key in the cluster's region (allowed: a key in us-east5)",
    ),
    (
        _set("trainyard:cluster", "securityPosture", "ON"),
        "trainyard:cluster.securityPosture",
        '"ON"',
        "is not allowed (allowed: DISABLED, BASIC, ENTERPRISE)",
    ),
    (
        _set("trainyard:cluster", "kubeletReadOnlyPort", "closed"),
        "trainyard:cluster.kubeletReadOnlyPort",
        '"closed"',
        "is not allowed (input should be a valid boolean",
    ),
    (
        _set("trainyard:network", "flowLogSampling", 0),
        "trainyard:network.flowLogSampling",
        "0",
        "is not allowed (input should be greater than 0)",
    ),
    (
        _set("trainyard:network", "flowLogSampling", 1.5),
        "trainyard:network.flowLogSampling",
        "1.5",
        "is out of range",
    ),
    (
        _set("trainyard:network", "natLogs", "all"),
        "trainyard:network.natLogs",
        '"all"',
        "is not allowed (did you mean ALL? allowed: ERRORS_ONLY, TRANSLATIONS_ONLY, ALL)",
    ),
    (
        _set("trainyard:gpuPools", 0, "compactPlacement", True),
        "trainyard:gpuPools[0].compactPlacement",
        "true",
        'is refused with capacity "dwsQueued": GKE does not place queued-provisioning GPU pools compactly',
    ),
    (
        _set("trainyard:tpuslices", []),
        "trainyard:tpuslices",
        "",
        "not a known key (did you mean trainyard:tpuSlices? allowed: gcp:project, gcp:region, trainyard:zone",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "max-seq-length", "abc"),
        "trainyard:jobs.fsdp[0].args.max-seq-length",
        '"abc"',
        "is not valid for the FSDP trainer (allowed: an int)",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "attn-implementation", "fast"),
        "trainyard:jobs.fsdp[0].args.attn-implementation",
        '"fast"',
        "is not valid for the FSDP trainer (allowed: one of auto, flash_attention_2, sdpa, eager)",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "max-seq-length", "0"),
        "trainyard:jobs.fsdp[0].args.max-seq-length",
        '"0"',
        "is not allowed by the FSDP trainer (allowed: > 0)",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "num-train-epochs", "0"),
        "trainyard:jobs.fsdp[0].args.max-steps",
        "",
        "is unset, and its default 0 is not allowed by the FSDP trainer (allowed: set --max-steps or --num-train",
    ),
    (  # two revisions (updatePolicy keep) would write the same checkpoints
        _set("trainyard:jobs", "fsdp", 0, "args", "output-dir", "/data/fsdp/mine"),
        "trainyard:jobs.fsdp[0].args.output-dir",
        '"/data/fsdp/mine"',
        "is set by trainyard (allowed: none; each revision writes to its own folder, fsdp/<name>/<revision>",
    ),
    (  # a token pasted where repository names go
        _set("trainyard:jobs", "fsdp", 0, "gated", ["hf_SENTINELxq7Zt0kenValueAbc"]),
        "trainyard:jobs.fsdp[0].gated[0]",
        '"hf_…"',
        "is a secret in clear text, not a repository (allowed: Hugging Face repository names",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "max-seq", "512"),
        "trainyard:jobs.fsdp[0].args.max-seq",
        '"512"',
        "is not a flag of the FSDP trainer (allowed: max-steps, max-seq-length or another flag of",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", {"peft": "true", "lora": "false"}),
        "trainyard:jobs.fsdp[0].args.lora",
        '"false"',
        "sets the trainer's peft, as trainyard:jobs.fsdp[0].args.peft does (allowed: one of them)",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "model-id", "-x"),
        "trainyard:jobs.fsdp[0].args.model-id",
        '"-x"',
        "is refused by the FSDP trainer's parser: expected one argument (allowed: a value that does not start",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "hub-token", "plain-words"),
        "trainyard:jobs.fsdp[0].args.hub-token",
        '"…"',
        (
            "is a secret in clear text, in the stack file, the state and the pod spec (allowed: a Hugging Face token "
            "reaches the trainer only through a Kubernetes Secret: set hfTokenKey"
        ),
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "args", "tokenizer-id", "hf_" + "AbCdEfGhIj" * 3 + "1234"),
        "trainyard:jobs.fsdp[0].args.tokenizer-id",
        '"hf_…"',
        "is a secret in clear text",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"steps": "500"}),
        "trainyard:jobs.maxtext[0].extraArgs.steps",
        '"500"',
        "is set by trainyard (allowed: use trainyard:jobs.maxtext[0].steps)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"run_name": "mine"}),
        "trainyard:jobs.maxtext[0].extraArgs.run_name",
        '"mine"',
        "is set by trainyard (allowed: use trainyard:jobs.maxtext[0].runName)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"checkpoint_period": "5"}),
        "trainyard:jobs.maxtext[0].extraArgs.checkpoint_period",
        '"5"',
        "is set by trainyard (allowed: use trainyard:jobs.maxtext[0].checkpointPeriod)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"model_name": "llama3-70b"}),
        "trainyard:jobs.maxtext[0].extraArgs.model_name",
        '"llama3-70b"',
        "is set by trainyard (allowed: use trainyard:jobs.maxtext[0].modelName)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"remat_policy": "full"}),
        "trainyard:jobs.maxtext[0].extraArgs.remat_policy",
        '"full"',
        "is set by trainyard (allowed: use trainyard:jobs.maxtext[0].rematPolicy)",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"base_output_directory": "gs://elsewhere"}),
        "trainyard:jobs.maxtext[0].extraArgs.base_output_directory",
        '"gs://elsewhere"',
        (
            "is set by trainyard (allowed: none; each run writes to the stack's bucket, in a folder named by "
            "trainyard:jobs.maxtext[0].runName)"
        ),
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"hf_access_token": "not-even-a-token"}),
        "trainyard:jobs.maxtext[0].extraArgs.hf_access_token",
        '"…"',
        (
            "is a secret in clear text, in the stack file, the state and the pod spec (allowed: a Hugging Face token "
            "reaches the trainer only through a Kubernetes Secret: set hfTokenKey"
        ),
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "extraArgs", {"token_for_hub": "plain-words"}),
        "trainyard:jobs.maxtext[0].extraArgs.token_for_hub",
        '"…"',
        "is a secret in clear text",
    ),
    (
        _set("trainyard:jobs", "maxtext", 0, "hfTokenKey", "trainyard:hfToken"),
        "trainyard:jobs.maxtext[0].hfTokenKey",
        '"trainyard:hfToken"',
        "is in the typed trainyard namespace, not a token (allowed: a key of its own in another namespace",
    ),
    (
        _set("trainyard:jobs", "fsdp", 0, "hfTokenKey", "gcp:project"),
        "trainyard:jobs.fsdp[0].hfTokenKey",
        '"gcp:project"',
        "is in the GCP provider's settings, not a token (allowed: a key of its own in another namespace",
    ),
    (
        _set("trainyard:jobs", "ray", "libtpuInitArgs", ["--xla_tpu_enable_async_all_gather=true", "--hub_token=x1"]),
        "trainyard:jobs.ray.libtpuInitArgs[1]",
        '"…"',
        "is a secret in clear text, in the stack file, the state and the pod spec (allowed: XLA and libtpu flags",
    ),
    (
        _set("trainyard:jobs", "maxtext", 1, "extraArgs", {"dataset_path": "gs://x/hf_" + "q" * 30}),
        "trainyard:jobs.maxtext[1].extraArgs.dataset_path",
        '"gs://x/hf_…"',
        "is a secret in clear text",
    ),
]
