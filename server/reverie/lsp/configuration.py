"""The client's settings: pulled with ``workspace/configuration``, pushed with
``workspace/didChangeConfiguration`` (registered dynamically when the client allows), and
resolved per field over the defaults (``reverie.lsp.settings``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from reverie.lsp import settings as settings_mod
from reverie.lsp.protocol import SETTINGS_SECTION

if TYPE_CHECKING:
    from reverie.lsp.server import ReverieLanguageServer

logger = logging.getLogger(__name__)


async def pull_settings(server: ReverieLanguageServer) -> None:
    """``workspace/configuration`` for section ``reverie`` (when the client supports it)."""
    workspace_caps = server.client_capabilities.workspace
    if not (workspace_caps and workspace_caps.configuration):
        return
    try:
        result = await server.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SETTINGS_SECTION)])
        )
    except Exception as exc:
        logger.warning("workspace/configuration failed: %s", exc)
        return
    pulled = result[0] if result else None
    server.pulled_settings = settings_mod.section_of(_plain(pulled)) if pulled else {}
    server.apply_settings(settings_mod.resolve(server.init_options, server.pulled_settings))


async def settings_changed(server: ReverieLanguageServer,
                           params: types.DidChangeConfigurationParams) -> None:
    workspace_caps = server.client_capabilities.workspace
    if workspace_caps and workspace_caps.configuration:
        await pull_settings(server)
        return
    pushed = settings_mod.section_of(_plain(params.settings))
    if pushed:
        server.pulled_settings = pushed
        server.apply_settings(settings_mod.resolve(server.init_options, server.pulled_settings))


async def register_config_watch(server: ReverieLanguageServer) -> None:
    """Dynamically register ``workspace/didChangeConfiguration`` when the client allows it."""
    workspace_caps = server.client_capabilities.workspace
    dcc = workspace_caps.did_change_configuration if workspace_caps else None
    if not (dcc and dcc.dynamic_registration):
        logger.debug("client cannot register didChangeConfiguration dynamically")
        return
    try:
        await server.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id="reverie-config",
                        method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                        register_options=types.DidChangeConfigurationRegistrationOptions(
                            section=SETTINGS_SECTION
                        ),
                    )
                ]
            )
        )
    except Exception as exc:
        logger.info("could not register for configuration changes: %s", exc)


def _plain(value: Any) -> Any:
    """Namedtuple ``Object``s (pygls' view of untyped JSON) back into dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
