/* The subset of TensorFlow Lite's C ABI that the test delegate needs.
 *
 * Declared here, field for field, after tflite/core/c/common.h, c_api_types.h and
 * builtin_op_data.h of the LiteRT sources that ai-edge-litert 2.3.0 is built from,
 * because those headers are not installed with the wheel. Only the layout matters:
 * a plugin compiled against this file runs in ai-edge-litert and in litedelegate
 * alike, and tests/interpreter_tests/test_external_delegate.py checks
 *   - every size and offset below against litedelegate's ctypes declarations
 *     (interpreter/external_delegate.py), through add_mul_delegate_layout_*(), and
 *   - against the installed LiteRT: sizeof(TfLiteNode) and sizeof(TfLiteRegistration)
 *     from the distances between the structs it hands out, TfLiteContext's members by
 *     calling them, and TfLiteTensor, TfLiteNode and the builtin_data structs by
 *     reading every tensor and node of a model and comparing with what litedelegate
 *     gives the same plugin.
 * Every struct is complete (TfLiteContext without its _WIN32-only members): the plugin
 * fills TfLiteRegistration and TfLiteDelegate itself and passes TfLiteRegistration by
 * value, so their sizes must be exact. Enums list only the values the plugin uses, and
 * TfLitePtrUnion only some of its (all pointer) members.
 */
#ifndef LITEDELEGATE_TEST_TFLITE_ABI_H_
#define LITEDELEGATE_TEST_TFLITE_ABI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum TfLiteStatus { kTfLiteOk = 0, kTfLiteError = 1, kTfLiteDelegateError = 2 } TfLiteStatus;

typedef enum { kTfLiteNoType = 0, kTfLiteFloat32 = 1, kTfLiteInt32 = 2 } TfLiteType;

typedef enum { kTfLiteActNone = 0, kTfLiteActRelu = 1 } TfLiteFusedActivation;

enum { kTfLiteBuiltinAdd = 0, kTfLiteBuiltinMul = 18, kTfLiteBuiltinDelegate = 51 };

typedef struct TfLiteIntArray {
  int size;
  int data[];
} TfLiteIntArray;

typedef struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
} TfLiteQuantizationParams;

typedef struct TfLiteQuantization {
  int type; /* TfLiteQuantizationType */
  void* params;
} TfLiteQuantization;

typedef union TfLitePtrUnion {
  int32_t* i32;
  float* f;
  char* raw;
  const char* raw_const;
  void* data;
} TfLitePtrUnion;

struct TfLiteContext;
struct TfLiteDelegate;

typedef struct TfLiteTensor {
  TfLiteType type;
  TfLitePtrUnion data;
  TfLiteIntArray* dims;
  TfLiteQuantizationParams params;
  int allocation_type; /* TfLiteAllocationType */
  size_t bytes;
  const void* allocation;
  const char* name;
  struct TfLiteDelegate* delegate;
  int buffer_handle; /* TfLiteBufferHandle */
  bool data_is_stale;
  bool is_variable;
  TfLiteQuantization quantization;
  void* sparsity; /* TfLiteSparsity* */
  const TfLiteIntArray* dims_signature;
} TfLiteTensor;

typedef struct TfLiteNode {
  TfLiteIntArray* inputs;
  TfLiteIntArray* outputs;
  TfLiteIntArray* intermediates;
  TfLiteIntArray* temporaries;
  void* user_data;
  void* builtin_data;
  const void* custom_initial_data;
  int custom_initial_data_size;
  struct TfLiteDelegate* delegate;
  bool might_have_side_effect;
} TfLiteNode;

typedef struct TfLiteRegistration {
  void* (*init)(struct TfLiteContext* context, const char* buffer, size_t length);
  void (*free)(struct TfLiteContext* context, void* buffer);
  TfLiteStatus (*prepare)(struct TfLiteContext* context, TfLiteNode* node);
  TfLiteStatus (*invoke)(struct TfLiteContext* context, TfLiteNode* node);
  const char* (*profiling_string)(const struct TfLiteContext* context, const TfLiteNode* node);
  int32_t builtin_code;
  const char* custom_name;
  int version;
  void* registration_external; /* TfLiteOperator* */
  void* (*async_kernel)(struct TfLiteContext* context, TfLiteNode* node);
  uint64_t inplace_operator;
} TfLiteRegistration;

typedef struct TfLiteDelegateParams {
  struct TfLiteDelegate* delegate;
  TfLiteIntArray* nodes_to_replace;
  TfLiteIntArray* input_tensors;
  TfLiteIntArray* output_tensors;
} TfLiteDelegateParams;

typedef struct TfLiteContext {
  size_t tensors_size;
  TfLiteStatus (*GetExecutionPlan)(struct TfLiteContext* context, TfLiteIntArray** execution_plan);
  TfLiteTensor* tensors;
  void* impl_;
  TfLiteStatus (*ResizeTensor)(struct TfLiteContext*, TfLiteTensor* tensor, TfLiteIntArray* new_size);
  void (*ReportError)(struct TfLiteContext*, const char* msg, ...);
  TfLiteStatus (*AddTensors)(struct TfLiteContext*, int tensors_to_add, int* first_new_tensor_index);
  TfLiteStatus (*GetNodeAndRegistration)(struct TfLiteContext*, int node_index, TfLiteNode** node,
                                         TfLiteRegistration** registration);
  TfLiteStatus (*ReplaceNodeSubsetsWithDelegateKernels)(struct TfLiteContext*, TfLiteRegistration registration,
                                                        const TfLiteIntArray* nodes_to_replace,
                                                        struct TfLiteDelegate* delegate);
  int recommended_num_threads;
  void* (*GetExternalContext)(struct TfLiteContext*, int);
  void (*SetExternalContext)(struct TfLiteContext*, int, void*);
  bool allow_fp32_relax_to_fp16;
  void* profiler;
  void* (*AllocatePersistentBuffer)(struct TfLiteContext* ctx, size_t bytes);
  TfLiteStatus (*AllocateBufferForEval)(struct TfLiteContext* ctx, size_t bytes, void** ptr);
  TfLiteStatus (*RequestScratchBufferInArena)(struct TfLiteContext* ctx, size_t bytes, int* buffer_idx);
  void* (*GetScratchBuffer)(struct TfLiteContext* ctx, int buffer_idx);
  TfLiteStatus (*ResizeTensorExplicit)(struct TfLiteContext* ctx, TfLiteTensor* tensor, int dims, const int* shape);
  TfLiteStatus (*PreviewDelegatePartitioning)(struct TfLiteContext* context, const TfLiteIntArray* nodes_to_replace,
                                              TfLiteDelegateParams** partition_params_array, int* num_partitions);
  TfLiteTensor* (*GetTensor)(const struct TfLiteContext* context, int tensor_idx);
  void* (*GetEvalTensor)(const struct TfLiteContext* context, int tensor_idx);
  TfLiteStatus (*GetModelMetadata)(const struct TfLiteContext* context, const char* name, const char** ptr,
                                   size_t* bytes);
  TfLiteStatus (*AcquireSubgraphContext)(struct TfLiteContext* context, int subgraph_index,
                                         struct TfLiteContext** acquired_context);
  TfLiteStatus (*ReleaseSubgraphContext)(struct TfLiteContext* context, int subgraph_index);
} TfLiteContext;

typedef struct TfLiteDelegate {
  void* data_;
  TfLiteStatus (*Prepare)(TfLiteContext* context, struct TfLiteDelegate* delegate);
  TfLiteStatus (*CopyFromBufferHandle)(TfLiteContext* context, struct TfLiteDelegate* delegate, int buffer_handle,
                                       TfLiteTensor* tensor);
  TfLiteStatus (*CopyToBufferHandle)(TfLiteContext* context, struct TfLiteDelegate* delegate, int buffer_handle,
                                     TfLiteTensor* tensor);
  void (*FreeBufferHandle)(TfLiteContext* context, struct TfLiteDelegate* delegate, int* handle);
  int64_t flags;
  void* opaque_delegate_builder; /* TfLiteOpaqueDelegateBuilder* */
} TfLiteDelegate;

/* builtin_op_data.h: the first field of both is the fused activation. */
typedef struct {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteAddParams;

typedef struct {
  TfLiteFusedActivation activation;
} TfLiteMulParams;

#endif /* LITEDELEGATE_TEST_TFLITE_ABI_H_ */
