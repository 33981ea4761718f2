"""trainyard: load the stack config, build the stack, export its outputs."""

import pulumi

from components.config import ConfigError, load_stack_config, raw_stack_config
from components.stack import TrainyardStack

try:
    config = load_stack_config(raw_stack_config())
except ConfigError as error:
    raise pulumi.RunError(f"invalid stack config:\n{error}") from None

stack = TrainyardStack("trainyard", config)
for key, value in stack.outputs().items():
    pulumi.export(key, value)
