"""Build the model client a job uses from ``Settings``."""

from __future__ import annotations

import logging
from typing import Literal

from reverie.config import CLI_PROVIDERS, Settings
from reverie.llm import anthropic, openai
from reverie.llm.anthropic import AnthropicClient
from reverie.llm.budget import check_budget, metered
from reverie.llm.capabilities import store_for
from reverie.llm.cli_agent import SPECS, CliAgentClient, find_binary, workdir_for
from reverie.llm.errors import LLMConfigError
from reverie.llm.extractive import OfflineClient
from reverie.llm.openai import OpenAIClient
from reverie.llm.types import ModelClient

logger = logging.getLogger(__name__)

Job = Literal["session_memory", "dream", "sleep"]


def make_client(settings: Settings, job: Job) -> ModelClient:
    """The client for ``job``: offline by default; raises ``LLMConfigError`` when a hosted
    provider has no key (an OpenAI-compatible ``REVERIE_BASE_URL``, e.g. Ollama, needs none),
    ``BudgetExceeded`` when the job would pass a spending cap. Model clients are metered."""
    if settings.provider == "offline":
        return OfflineClient()
    check_budget(settings, job)
    return metered(_make_model_client(settings, job), settings, job)


def _make_model_client(settings: Settings, job: Job) -> ModelClient:
    if settings.provider in CLI_PROVIDERS:
        spec = SPECS[settings.provider]
        binary = find_binary(spec, settings.cli_path)
        budget = {"session_memory": settings.session_memory_budget_seconds,
                  "dream": settings.dream_budget_seconds,
                  "sleep": settings.sleep_budget_seconds}[job]
        logger.debug("model client for %s: %s at %s", job, settings.provider, binary)
        return CliAgentClient(spec, binary=binary, workdir=workdir_for(settings.data_dir),
                              model=settings.model_for(job), timeout=budget)
    key = settings.resolved_api_key()
    common = {
        "api_key": key,
        "base_url": settings.base_url,
        "connect_timeout": settings.connect_timeout_seconds,
        "request_timeout": settings.request_timeout_seconds,
        "max_retries": settings.max_retries,
        "max_output_tokens": settings.max_output_tokens,
        "stream": settings.stream,
        "capabilities": store_for(settings.data_dir),
    }
    if settings.provider == "openai":
        if key is None and settings.base_url is None:
            raise LLMConfigError(
                "No API key for the openai provider: set REVERIE_API_KEY or OPENAI_API_KEY "
                "(or REVERIE_BASE_URL for a local OpenAI-compatible server).",
                provider="openai",
            )
        model = settings.model_for(job) or openai.DEFAULT_MODEL
        logger.debug("model client for %s: openai %s", job, model)
        return OpenAIClient(model=model, **common)  # type: ignore[arg-type]
    if settings.provider == "anthropic":
        if key is None:
            raise LLMConfigError(
                "No API key for the anthropic provider: set REVERIE_API_KEY or ANTHROPIC_API_KEY.",
                provider="anthropic",
            )
        model = settings.model_for(job) or anthropic.DEFAULT_MODEL
        logger.debug("model client for %s: anthropic %s", job, model)
        return AnthropicClient(model=model, **common)  # type: ignore[arg-type]
    raise LLMConfigError(
        f"Unknown provider {settings.provider!r}: set REVERIE_PROVIDER to offline, openai, "
        "anthropic, claude-code-cli, codex-cli or gemini-cli."
    )
