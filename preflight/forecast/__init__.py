"""Step time, throughput, MFU and cost per run of every job, FSDP on GPUs and MaxText on TPUs."""
