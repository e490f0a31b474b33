"""Progress bars (tqdm) for the core's (stage, done, total) callbacks: the writer's and the
dataset's ``progress=True``."""

from __future__ import annotations

from typing import Any, Dict


class Progress:
    """tqdm bars for the core's (stage, done, total) callbacks."""

    def __init__(self, enabled: bool, desc: str):
        self.enabled = enabled
        self.desc = desc
        self.bars: Dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm.auto import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=f"{self.desc}: {stage}", leave=False)
        bar.n = done
        bar.refresh()

    def callback(self):
        return self if self.enabled else None

    def close(self):
        for bar in self.bars.values():
            bar.close()
