"""How vLLM groups a hybrid model's layers, and what one block of its KV cache costs.

vLLM (``_get_kv_cache_groups_uniform_page_size`` in ``vllm/v1/core/kv_cache_utils.py``,
0.25.0 and 0.32.0 alike) puts the layers of each kind (attention, Mamba or
linear-attention state) in groups of the same size: the fewest layers of any kind,
or the most where that is under 1.5 times the fewest, padding the rest. Every
page has one size (the attention page, the state page padded to it), and the
cache is ``group_size`` pools of ``page x num_blocks``, each shared by one layer of
every group. So a block costs ``group_size x page``, not one page per layer.
"""

from __future__ import annotations


def group_size(attention_layers: int, state_layers: int) -> int:
    """Layers per KV cache group for a model with both kinds of layers."""
    counts = [n for n in (attention_layers, state_layers) if n > 0]
    if not counts:
        return 0
    fewest, most = min(counts), max(counts)
    return most if most < fewest * 1.5 else fewest


def page_bytes(block_size: int, attention_bytes_per_token: int, state_page_bytes: int) -> int:
    """One page: the attention page, or the state's where that is larger (a block size
    given by hand that is too small for the state; vLLM pads the smaller one)."""
    return max(block_size * attention_bytes_per_token, state_page_bytes)
