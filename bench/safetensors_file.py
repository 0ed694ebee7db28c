"""Writing a safetensors file (float32 tensors, names sorted), for the bench
scripts that write model directories `normcore train --init DIR` reads:
bench/generate/pytorch_generate.py (PyTorch tensors) and
bench/llmc/write_weights.py (NumPy arrays). Only NumPy is needed.

The format: an 8-byte little-endian header length, the JSON header (each
tensor's dtype, shape and byte range; padded with spaces to a multiple of
8 bytes), then the tensors' bytes.
"""
import json
import struct


def write_safetensors(path, tensors):
    """tensors: name -> NumPy array or PyTorch tensor (written as float32)."""
    # NumPy is imported here, not with this module: it loads the same
    # OpenBLAS as Debian's PyTorch, which reads its core type and thread
    # count once, when it loads, so a benchmark must be able to import this
    # module before tuning them (pytorch_setup.py) and still have them tuned.
    import numpy as np

    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        array = t.detach().cpu().numpy() if hasattr(t, "detach") else t
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for blob in blobs:
            f.write(blob)
