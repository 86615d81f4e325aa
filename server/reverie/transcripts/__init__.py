"""Agent transcripts: adapters for each agent's on-disk format, tailing, discovery, watching."""
