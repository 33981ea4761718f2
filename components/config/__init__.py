"""The stack config layer, one way: `base` and the models (`models`, `jobs`) <- the checks (`checks`,
`job_checks`, with `problem` for their messages) <- `load` (what the program and preflight call)."""
