"""Dataset.verify: every file of a dataset checked, the manifest against the files and
every checksum of every file (see :meth:`motes.Dataset.verify`)."""

from __future__ import annotations

from typing import Dict, Sequence

from ._progress import Progress


def verify(core, steps: Sequence, progress: bool) -> Dict[str, int]:
    """:meth:`motes.Dataset.verify` over ``core`` (the dataset's DatasetCore) and its
    ``steps`` (:class:`motes.dataset.Step`), with a progress bar per file when ``progress``."""
    files = pinned = 0
    for st in steps:
        for name, sp in st.species.items():
            src = core.open_species(st.index, name)  # checked against the manifest, not cached
            pinned += sp["checksum"] is not None
            for k in range(src.part_count):
                f = src.part(k)
                bar = Progress(progress, f"step {st.index} {name}" + (f" part {k}" if src.part_count > 1 else ""))
                try:
                    f.verify_data(None if not progress else (lambda d, t: bar("verify", d, t)))
                finally:
                    bar.close()
                files += 1
        for name in st.fields:
            f = core.open_field(st.index, name)  # every part checked against the manifest
            bar = Progress(progress, f"step {st.index} field {name}")
            try:
                f.verify()
            finally:
                bar.close()
            files += f.part_count
    species = sum(len(st.species) for st in steps)
    fields = sum(len(st.fields) for st in steps)
    return {"files": files, "steps": len(steps), "species": species, "fields": fields, "pinned": pinned}
