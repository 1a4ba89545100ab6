// How gradients are grouped for communication: parameters in reverse order of registration (the
// order backward produces their gradients), cut into buckets of about distributed.bucket_size
// bytes. Each bucket is one flat buffer padded to a multiple of the world size, so it can be
// reduce-scattered into equal chunks: rank r owns elements [r*chunk, (r+1)*chunk) of every
// bucket. The ZeRO strategies shard their optimizer state (and zero3 its parameters) along
// these chunks, so the layout is the one thing DDP, ZeRO and checkpoint resharding share.
// An optimizer whose state comes in blocks (adamw_8bit: one scale per 256 elements) asks for an
// alignment: every parameter then starts at a multiple of it and the chunks are multiples of it,
// so each rank's piece of a parameter starts on a block boundary (the gaps stay zero).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hftrain::parallel {

struct BucketEntry {
  size_t param = 0;     // index into the parameter list
  int64_t offset = 0;   // first element in the bucket
  int64_t numel = 0;
};

struct Bucket {
  std::vector<BucketEntry> entries;
  int64_t numel = 0;         // up to the end of the last entry (the entries and their gaps)
  int64_t padded_numel = 0;  // numel rounded up to a multiple of world_size x align
  int64_t chunk() const { return padded_numel / world_size; }
  int world_size = 1;
  int64_t align = 1;  // entries start at multiples of it, and so do the chunks

  // Appends parameter `param` of `count` elements at the next multiple of align.
  void append(size_t param, int64_t count);
  // Sets padded_numel (once the entries are in).
  void pad();
};

// A piece of one parameter inside one rank's chunk of a bucket.
struct ShardPiece {
  size_t bucket = 0;
  size_t param = 0;
  int64_t param_offset = 0;  // first element of the piece within the (flattened) parameter
  int64_t chunk_offset = 0;  // first element of the piece within the rank's chunk
  int64_t numel = 0;
};

// `numels` and `element_bytes` per parameter, in registration order; `align`: see above.
std::vector<Bucket> plan_buckets(const std::vector<int64_t>& numels, int64_t element_bytes, int64_t bucket_bytes,
                                 int world_size, int64_t align = 1);
// The pieces of rank `rank`'s chunks, bucket by bucket, in chunk order.
std::vector<ShardPiece> shard_pieces(const std::vector<Bucket>& buckets, int rank);

}  // namespace hftrain::parallel
