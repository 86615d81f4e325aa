"""Provider-neutral model clients (OpenAI-compatible, Anthropic, offline) on httpx."""
