"""Packing token streams into fixed-length blocks, for objectives whose examples need no sentence boundaries
(causal LMs: GPT, NNLM, ELMo's LMs). Written as a batched ``datasets.map`` function, so it is cached and
parallel like the tokenization before it, and also works on streamed (``IterableDataset``) corpora.
"""

from __future__ import annotations


def pack_into_blocks(batch: dict[str, list[list[int]]], block_size: int, separator_id: int | None = None,
                     column: str = "input_ids") -> dict[str, list[list[int]]]:
    """Concatenate the rows of ``batch[column]`` (optionally with ``separator_id`` after each row, e.g. an
    end-of-text token between documents) and cut the stream into blocks of exactly ``block_size`` tokens.

    The tail shorter than a block is dropped, as in transformers' ``run_clm.py``: use a large map batch size so
    little is lost (at most ``block_size - 1`` tokens per map batch).

    >>> pack_into_blocks({"input_ids": [[1, 2, 3], [4, 5], [6, 7, 8, 9]]}, block_size=4, separator_id=0)
    {'input_ids': [[1, 2, 3, 0], [4, 5, 0, 6], [7, 8, 9, 0]]}
    >>> # dataset.map(pack_into_blocks, batched=True, batch_size=1000, fn_kwargs={"block_size": 512},
    >>> #             remove_columns=dataset.column_names)
    """
    if block_size < 1:
        raise ValueError(f"block_size must be positive, got {block_size}")
    stream: list[int] = []
    for row in batch[column]:
        stream.extend(row)
        if separator_id is not None:
            stream.append(separator_id)
    usable = len(stream) // block_size * block_size
    return {column: [stream[i : i + block_size] for i in range(0, usable, block_size)]}

