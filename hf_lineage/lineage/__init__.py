"""`hf-lineage lineage`: every family pretrained alike, fine-tuned on four task types, and the report."""
