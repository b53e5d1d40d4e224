"""Shapes of credentials that leak when written in plain text, whatever the key is called.

The lowest layer uses them too: a value with a credential's shape is never echoed back in a
message (`got ...`), because messages reach pull-request comments and CI logs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

TOKEN_SHAPES = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),
    ("a GitHub token", re.compile(r"\b(ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("an AWS access key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{20,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/@]+:[^\s/@]+@", re.I)


def credential_shape(value: str) -> str | None:
    """What kind of credential `value` looks like or holds, if any."""
    for what, shape in TOKEN_SHAPES:
        if shape.search(value):
            return what
    if _URL.search(value) and _url_password(value):
        return "a URL with a password"
    return None


def _url_password(value: str) -> bool:
    for match in _URL.finditer(value):
        try:
            if urlsplit(value[match.start() :].split()[0]).password:
                return True
        except ValueError:
            return True
    return False


_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/@:]+:)([^\s/@]+)(@)", re.I)


def redact(text: str) -> str:
    """`text` with every credential-shaped part replaced by what it looks like."""
    for what, shape in TOKEN_SHAPES:
        text = shape.sub(f"[hidden: {what}]", text)
    return _URL_PASSWORD.sub(r"\1[hidden]\3", text)
