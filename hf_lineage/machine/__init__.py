"""What the machine computes: ``precision`` (the mixed precision a run may train in, by what its device computes
natively, and the one line naming the CPU, its cores and threads and the GPU that results record). Nothing here
imports torch at import time."""
