"""Run the program under Pulumi's mocks and record the plan the engine would receive."""
