"""What every converter shares: loading renamed weights and checking that they line up."""

import re


def load_converted(model, state_dict, tied: str):
    """Load ``state_dict`` into ``model``; names matching the regex ``tied`` (tied copies, constant buffers, heads
    one side lacks) may be missing or unexpected, anything else is an error naming the keys."""
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = [k for k in missing if not re.search(tied, k)]
    unexpected = [k for k in unexpected if not re.search(tied, k)]
    if missing or unexpected:
        raise ValueError(f"weights do not line up: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model.eval()
