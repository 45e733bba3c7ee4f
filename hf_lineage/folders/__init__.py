"""The folders the commands write, each written whole or not at all:

* ``pretrained`` — the folder a pre-trained model is saved as by every trainer (``save_final``: model, tokenizer,
  generation defaults, model card), the code that loads it with ``trust_remote_code`` (``write_code``) and its push
  to the Hub (``check_push``, ``push_folder``);
* ``staged`` — ``staged_folder(out)``: any command's output folder, written in a staging folder beside it and swapped
  in at the end (the standard library only).
"""
