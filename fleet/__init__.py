"""A fleet of stacks (one per cluster) rolled out in waves through Pulumi's Automation API, each
stack behind gates: `volcano-platform fleet` (`cli/fleet_command.py`)."""
