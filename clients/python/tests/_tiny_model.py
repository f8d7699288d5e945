"""A tiny randomly initialised causal LM and a character-level tokenizer built in code (no
downloads), for the real GRPOTrainer runs in test_trl.py. Imported only when trl, transformers,
torch and tokenizers are installed.

The chat template is TRL's bundled Qwen3 template when TRL ships one (tool calling needs a
template TRL knows how to parse and keep prefix-preserving), else a plain ChatML template.
"""

from __future__ import annotations

import importlib.resources
import string
from typing import Any, Optional, Tuple

SPECIAL = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def bundled_qwen3_template() -> Optional[str]:
    """TRL's own Qwen3 chat template, if this TRL version ships it."""
    try:
        root = importlib.resources.files("trl") / "chat_templates"
        for name in ("qwen3.jinja", "qwen3_training.jinja"):
            path = root / name
            if path.is_file():
                return path.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        return None
    return None


def tiny_model_and_tokenizer(tools: bool = False) -> Tuple[Any, Any]:
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    chars = sorted(set(string.printable))
    vocab = {tok: i for i, tok in enumerate(SPECIAL)}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        unk_token="<unk>",
        eos_token="<|im_end|>",
        bos_token=None,
        additional_special_tokens=SPECIAL[2:],
    )
    tokenizer.padding_side = "left"
    template = bundled_qwen3_template() if tools else None
    tokenizer.chat_template = template or CHATML
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["<|im_end|>"],
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    model.config.name_or_path = "tiny-random-envworker"
    return model, tokenizer
