"""Hosts of the OpenAI wire formats, as data: one ``Host`` per place a model may live.

A ``Host`` says where the API is (a default base URL and the variable overriding it), which
variable holds its key and how the key travels, and the host's known deviations from the
OpenAI API (the ``max_tokens`` field it reads, whether reasoning goes back, the tool-call
ids it accepts). ``HOSTS`` is the one table of them; ``"groq:llama-3.3-70b-versatile"``
is ``OpenAIChatModel("llama-3.3-70b-versatile", host=HOSTS["groq"])``. A host is not a
subclass: the wire mapping stays ``openai.py``'s (or ``openai_responses.py``'s), the host
only fills in the settings (``HTTPModel.host``).

A model on a host reads its key from the host's variable only: ``OPENAI_API_KEY`` is never
sent to Groq. A host whose ``key_variable`` is None (Ollama) or whose key is optional (a
local vLLM or LM Studio) sends no key when none is set.

Azure OpenAI is a host with its own URL shapes: with an ``api_version`` (``OPENAI_API_VERSION``
for ``infer_model``) the deployment URLs ``{endpoint}/openai/deployments/{deployment}/chat/
completions?api-version=…`` (``{endpoint}/openai/responses?api-version=…`` for the Responses
API, which takes the deployment in the body); without one the v1 API,
``{endpoint}/openai/v1/…``, which needs no version. Its key goes in the ``api-key``
header; a Microsoft Entra token (``HTTPModel.token_provider``) as ``Authorization: Bearer``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Literal
from urllib.parse import quote

import attrs

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
ToolCallIds = Literal["any", "alnum9"]
KeyHeader = Literal["authorization", "api-key"]


@attrs.frozen
class Host:
    """Where an OpenAI-format API is served and how it deviates (see the module).

    ``base_url`` is the default (None: the variable must be set, as Azure's endpoint);
    ``base_url_variable`` overrides it. ``key_variable`` names the one variable the key is
    read from (None: the host takes no key), ``key_required`` whether a missing one is an
    error, ``key_header`` how it is sent (``Authorization: Bearer`` or Azure's
    ``api-key``). ``max_tokens_field`` is the field ``ChatOptions.max_tokens`` goes in;
    ``send_reasoning`` whether assistant messages carry their ``reasoning_content`` back;
    ``tool_call_ids`` ``"alnum9"`` for a host accepting only 9-character alphanumeric
    tool-call ids (Mistral), which others' ids are re-keyed to on the wire.
    ``api_version`` is Azure's (None: its v1 API); ``azure`` says the URLs are Azure's.
    """

    name: str
    base_url: str | None
    base_url_variable: str
    key_variable: str | None
    key_required: bool = True
    key_header: KeyHeader = "authorization"
    max_tokens_field: MaxTokensField = "max_tokens"
    send_reasoning: bool = False
    tool_call_ids: ToolCallIds = "any"
    azure: bool = False
    api_version: str | None = None
    telemetry_name: str = attrs.field(
        default=attrs.Factory(lambda self: self.name, takes_self=True), eq=False, repr=False
    )
    """``gen_ai.provider.name`` in OpenTelemetry spans: the conventions' name for the host
    (``azure.ai.openai``, ``mistral_ai``, ``x_ai``), else its own name."""

    @property
    def key_variables(self) -> tuple[str, ...]:
        """The variables the key is read from: the host's own, or none."""
        return () if self.key_variable is None else (self.key_variable,)

    def url(self, base_url: str, path: str, deployment: str, *, per_deployment: bool) -> str:
        """Where a request for ``path`` (``/chat/completions``, ``/responses``) goes:
        ``base_url + path``, or Azure's URL for it (``per_deployment``: the path is one of
        the deployment-scoped ones, as chat completions are and the Responses API is not)."""
        if not self.azure:
            return f"{base_url}{path}"
        if self.api_version is None:
            return f"{base_url}/openai/v1{path}"
        version = quote(self.api_version, safe="")
        if per_deployment:
            name = quote(deployment, safe="")
            return f"{base_url}/openai/deployments/{name}{path}?api-version={version}"
        return f"{base_url}/openai{path}?api-version={version}"

    def auth_headers(self, secret: str | None, *, token: bool) -> dict[str, str]:
        """The credential headers for ``secret``: a token (Entra) always as a bearer token,
        a key as the host takes it."""
        if not secret:
            return {}
        if token or self.key_header == "authorization":
            return {"Authorization": f"Bearer {secret}"}
        return {"api-key": secret}


def _openai_compatible(
    name: str,
    base_url: str,
    key_variable: str | None,
    *,
    base_url_variable: str | None = None,
    **deviations: object,
) -> tuple[str, Host]:
    variable = base_url_variable or f"{name.upper()}_BASE_URL"
    return name, Host(name, base_url, variable, key_variable, **deviations)  # type: ignore[arg-type]


HOSTS: Mapping[str, Host] = dict(
    [
        _openai_compatible(
            "ollama",
            "http://localhost:11434/v1",
            None,
            # local, no key
        ),
        _openai_compatible(
            "vllm",
            "http://localhost:8000/v1",
            "VLLM_API_KEY",
            # local; the key only when the server was started with one
            key_required=False,
        ),
        _openai_compatible(
            "lmstudio",
            "http://localhost:1234/v1",
            None,
            # local, no key
        ),
        _openai_compatible(
            "groq",
            "https://api.groq.com/openai/v1",
            "GROQ_API_KEY",
            # max_completion_tokens
            max_tokens_field="max_completion_tokens",
        ),
        _openai_compatible(
            "deepseek",
            "https://api.deepseek.com",
            "DEEPSEEK_API_KEY",
            # reasoning_content read as reasoning and sent back as reasoning_content
            send_reasoning=True,
        ),
        _openai_compatible(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            # attribution headers (headers=), provider routing (extra_body provider)
        ),
        _openai_compatible(
            "together",
            "https://api.together.xyz/v1",
            "TOGETHER_API_KEY",
            # max_tokens
        ),
        _openai_compatible(
            "fireworks",
            "https://api.fireworks.ai/inference/v1",
            "FIREWORKS_API_KEY",
            # max_tokens
        ),
        _openai_compatible(
            "mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            # 9-character alphanumeric tool-call ids
            tool_call_ids="alnum9",
            telemetry_name="mistral_ai",
        ),
        _openai_compatible(
            "xai",
            "https://api.x.ai/v1",
            "XAI_API_KEY",
            # max_completion_tokens
            max_tokens_field="max_completion_tokens",
            telemetry_name="x_ai",
        ),
        _openai_compatible(
            "cerebras",
            "https://api.cerebras.ai/v1",
            "CEREBRAS_API_KEY",
            # max_completion_tokens
            max_tokens_field="max_completion_tokens",
        ),
    ]
)
"""The OpenAI-compatible hosts by name (``infer_model`` takes each as ``"<name>:<model>"``)."""


def azure_host(api_version: str | None = None) -> Host:
    """Azure OpenAI: the endpoint from ``AZURE_OPENAI_ENDPOINT``, the key from
    ``AZURE_OPENAI_API_KEY`` in the ``api-key`` header; ``api_version`` selects the
    deployment URLs (None: the v1 API)."""
    return Host(
        "azure",
        None,
        "AZURE_OPENAI_ENDPOINT",
        "AZURE_OPENAI_API_KEY",
        key_header="api-key",
        max_tokens_field="max_completion_tokens",
        azure=True,
        api_version=api_version,
        telemetry_name="azure.ai.openai",
    )


_ALNUM9 = re.compile("[A-Za-z0-9]{9}")
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def alnum9_id(call_id: str) -> str:
    """``call_id`` as a 9-character alphanumeric id, as Mistral requires: itself when it is
    one, else one derived from it (the same for the same id, so a call and its result stay
    paired; two ids share one with odds of 1 in 62⁹)."""
    if _ALNUM9.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).digest())
    digits = []
    for _ in range(9):
        number, digit = divmod(number, len(_ALPHABET))
        digits.append(_ALPHABET[digit])
    return "".join(digits)
