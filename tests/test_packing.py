import datasets
import pytest

from hf_lineage.data import pack_into_blocks


def test_blocks_are_the_concatenated_stream_cut_evenly():
    rows = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10]]
    out = pack_into_blocks({"input_ids": rows}, block_size=3, separator_id=0)
    stream = [t for row in rows for t in (*row, 0)]
    assert out["input_ids"] == [stream[i:i + 3] for i in range(0, 12, 3)]
    assert all(len(block) == 3 for block in out["input_ids"])


def test_packing_through_datasets_map_with_parallel_workers():
    dataset = datasets.Dataset.from_dict({"input_ids": [list(range(i, i + 7)) for i in range(0, 700, 7)]})
    packed = dataset.map(pack_into_blocks, batched=True, batch_size=50, num_proc=2,
                         fn_kwargs={"block_size": 16}, remove_columns=dataset.column_names)
    flat = [t for block in packed["input_ids"] for t in block]
    assert all(len(block) == 16 for block in packed["input_ids"])
    # Each map batch of 50 rows (350 tokens) drops its 350 % 16 = 14-token tail; nothing is reordered.
    assert flat == [t for start in (0, 350) for t in range(start, start + 336)]


def test_bad_block_size():
    with pytest.raises(ValueError, match="block_size"):
        pack_into_blocks({"input_ids": [[1]]}, block_size=0)
