"""Message content as the server's text, whoever built the message (TRL, verifiers, OpenAI)."""

from __future__ import annotations

from typing import Any, Mapping, Optional


def content_text(content: Any) -> Optional[str]:
    """Content as text: a list of content parts is joined (text parts as mappings, objects with a
    ``text`` attribute, or plain strings; parts without text such as images are skipped), ``None``
    stays ``None``."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            text = p if isinstance(p, str) else p.get("text") if isinstance(p, Mapping) else getattr(p, "text", None)
            if isinstance(text, str):
                parts.append(text)
        return "".join(parts)
    return str(content)
