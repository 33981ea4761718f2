"""trainyard: load the stack config, build the stack, export its outputs."""

import pulumi

from components.config.load import load_stack_config, raw_stack_config
from components.config.tokens import check_tokens
from components.stack import TrainyardStack

# A ConfigError is a pulumi.RunError: the engine shows its lines (key, value, what is allowed) and no trace.
config = load_stack_config(raw_stack_config(), pulumi.get_stack())
check_tokens(config)
stack = TrainyardStack("trainyard", config)
for key, value in stack.outputs().items():
    pulumi.export(key, value)
