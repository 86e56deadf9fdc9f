"""The hosted agents' HTTP surface: the callback URL they post events to (docs/hosted-agents.md).

The protocol itself (case dispatch, callback tokens, message schemas, recording events) is part of
the pipeline: runs/pipeline/hosted/.
"""
