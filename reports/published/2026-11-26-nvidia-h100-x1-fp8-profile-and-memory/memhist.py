"""pytest plugin (device diagnosis): CUDA allocation history of the run, dumped at its end."""
import os

import torch


def pytest_sessionstart(session):
    torch.cuda.memory._record_memory_history(max_entries=500000)


def pytest_sessionfinish(session):
    torch.cuda.memory._dump_snapshot(os.path.join(os.environ["OUT"], "memsnap.pickle"))
