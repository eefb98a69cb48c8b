"""Samples of `perf script -F comm,ip,sym` counted by layer, for Labs/gate-cpu and
Labs/ingest-cpu: each sample counts in the innermost layer of its stack, so that a runtime or
allocator frame counts for the code that called it."""


def stacks(path):
    """Each sample's frames, innermost first."""
    frames = []
    for line in open(path, errors="replace"):
        if not line.strip():
            if frames:
                yield frames
            frames = []
        elif line[0] in " \t":
            parts = line.split(None, 1)
            frames.append(parts[1].strip() if len(parts) > 1 else "")
    if frames:
        yield frames


def layer(frames, layers):
    """The first of `layers` ((name, substrings of mangled names)) that a frame matches, tried
    on each frame from the innermost out; "other" when none does."""
    for frame in frames:
        for name, patterns in layers:
            if any(p in frame for p in patterns):
                return name
    return "other"
