"""Where the command-line test server listens, and where the shipped configs look for it:
both read one variable (`${oc.env:LOSONA_TEST_SERVER_PORT,8765}` in their api_base)."""

from __future__ import annotations

import os

from losona.core.errors import LosonaError

PORT_VARIABLE = "LOSONA_TEST_SERVER_PORT"
# What the configs use when the variable is unset.
CONFIG_PORT = 8765
# The configs that point at the server, for the messages that tell the user to move them.
CONFIGS = "conf/model/local_openai.yaml and conf/judge/local_openai.yaml"


def configs_port() -> int:
    """The port the shipped configs point at: the variable's, else 8765; a bad value is a
    LosonaError."""
    value = os.environ.get(PORT_VARIABLE)
    if not value:
        return CONFIG_PORT
    if not value.isdigit() or int(value) > 65535:
        raise LosonaError(f"{PORT_VARIABLE}={value!r}: expected a port number, 0 to 65535")
    return int(value)


def export_line(port: int) -> str:
    """What to run so that the configs point at a server on `port`."""
    return f"export {PORT_VARIABLE}={port}   # so that {CONFIGS} point at this server"


def taken_message(port: int) -> str:
    """The one line for a port another process holds."""
    return (
        f"error: port {port} on 127.0.0.1 is already in use (another test server?); stop it, "
        f"or choose a port with --port N or {PORT_VARIABLE}=N ({CONFIGS} read the same "
        "variable), or --port 0 for a free one"
    )
