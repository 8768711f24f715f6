// A heavy CUDA translation unit for measuring nvcc's memory per process tree (bench/nvcc_profile.py): CUB radix,
// segmented and merge sorts instantiated for several key/value types, plus a fully unrolled register-tiled matmul.
// -DHEAVY_VARIANT=0..9 picks which types and tile sizes are instantiated, so TUs of one workload differ only in a -D
// value (the shape of generated kernel files such as flash-attn's), and in how heavy they are.
#include <cub/cub.cuh>

#include <cstdint>

#ifndef HEAVY_VARIANT
#define HEAVY_VARIANT 0
#endif

namespace heavy {

struct ByKey {
  template <typename T>
  __host__ __device__ bool operator()(const T& a, const T& b) const { return a < b; }
};

template <typename Key, typename Value>
void SortPairs(void* temp, size_t& temp_bytes, const Key* keys_in, Key* keys_out, const Value* values_in,
               Value* values_out, int n, const int* offsets, int segments, cudaStream_t stream) {
  cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, 0,
                                  sizeof(Key) * 8, stream);
  cub::DeviceRadixSort::SortPairsDescending(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, 0,
                                            sizeof(Key) * 8, stream);
  cub::DeviceSegmentedRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, segments,
                                           offsets, offsets + 1, 0, sizeof(Key) * 8, stream);
  cub::DeviceMergeSort::SortPairs(temp, temp_bytes, const_cast<Key*>(keys_in), const_cast<Value*>(values_in), n,
                                  ByKey{}, stream);
}

// A register-tiled matmul whose inner loops are fully unrolled: ptxas allocates registers for TILE x TILE
// accumulators, which is where its memory goes.
template <int TILE, typename T>
__global__ void TiledMatmul(const T* a, const T* b, T* c, int n) {
  T acc[TILE][TILE] = {};
  int row = (blockIdx.y * blockDim.y + threadIdx.y) * TILE;
  int col = (blockIdx.x * blockDim.x + threadIdx.x) * TILE;
  for (int k = 0; k < n; ++k) {
    T a_frag[TILE], b_frag[TILE];
#pragma unroll
    for (int i = 0; i < TILE; ++i) {
      a_frag[i] = a[(row + i) * n + k];
      b_frag[i] = b[k * n + col + i];
    }
#pragma unroll
    for (int i = 0; i < TILE; ++i) {
#pragma unroll
      for (int j = 0; j < TILE; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
  }
#pragma unroll
  for (int i = 0; i < TILE; ++i) {
#pragma unroll
    for (int j = 0; j < TILE; ++j) c[(row + i) * n + col + j] = acc[i][j];
  }
}

template <typename Key, typename Value>
void InstantiateSort() {
  size_t bytes = 0;
  SortPairs<Key, Value>(nullptr, bytes, nullptr, nullptr, nullptr, nullptr, 0, nullptr, 0, nullptr);
}

template <int TILE, typename T>
void InstantiateMatmul() {
  TiledMatmul<TILE, T><<<1, 1>>>(nullptr, nullptr, nullptr, 0);
}

}  // namespace heavy

// Variant v instantiates (v % 5 + 1) sort type pairs and matmul tiles up to 8 + 2 * (v / 2). Its entry point is
// named after the variant, so every variant can be linked into one library.
#define HEAVY_JOIN2(a, b) a##b
#define HEAVY_JOIN(a, b) HEAVY_JOIN2(a, b)
void HEAVY_JOIN(HeavyEntry, HEAVY_VARIANT)() {
  constexpr int kSorts = HEAVY_VARIANT % 5 + 1;
  constexpr int kMaxTile = 8 + 2 * (HEAVY_VARIANT / 2);
  heavy::InstantiateSort<uint32_t, uint32_t>();
  if constexpr (kSorts > 1) heavy::InstantiateSort<uint64_t, uint32_t>();
  if constexpr (kSorts > 2) heavy::InstantiateSort<float, uint64_t>();
  if constexpr (kSorts > 3) heavy::InstantiateSort<double, double>();
  if constexpr (kSorts > 4) heavy::InstantiateSort<int16_t, float>();
  heavy::InstantiateMatmul<4, float>();
  heavy::InstantiateMatmul<8, float>();
  if constexpr (kMaxTile >= 12) heavy::InstantiateMatmul<12, float>();
  if constexpr (kMaxTile >= 16) heavy::InstantiateMatmul<16, float>();
  if constexpr (kMaxTile >= 16) heavy::InstantiateMatmul<16, double>();
}
