"""Reads an hftrain token cache file (lib/data/token_cache.cpp's layout) for tests and benchmarks:
header (magic, width, has_mask, num_tokens, num_docs, key_bytes), the key, document starts, tokens
(uint16 or uint32), then one loss flag per token when has_mask. Every section starts 8-aligned."""
import struct


def read_cache(path):
    """(ids, mask, starts): the token ids, their 0/1 loss flags (all 1 without a mask), and the
    document starts plus the end."""
    data = open(path, "rb").read()
    _, width, has_mask, num_tokens, num_docs, key_bytes = struct.unpack_from("<8sIIQQQ", data, 0)
    pad = lambda n: (n + 7) & ~7
    off = pad(40) + pad(key_bytes)
    starts = struct.unpack_from(f"<{num_docs + 1}Q", data, off)
    off += 8 * (num_docs + 1)
    ids = struct.unpack_from(f"<{num_tokens}{'H' if width == 2 else 'I'}", data, off)
    off += pad(width * num_tokens)
    mask = list(data[off:off + num_tokens]) if has_mask else [1] * num_tokens
    return ids, mask, starts
