# Kernel-tuning token counts and block counts that never came from a capture size.
def make_moe(vllm_config, attn_num_blocks):
    layer = FusedMoE(
        max_capture_size=vllm_config.compilation_config.max_cudagraph_capture_size,
        tune_max_num_tokens=max(vllm_config.compilation_config.max_cudagraph_capture_size, 1),
    )
    vllm_config.cache_config.num_gpu_blocks_override = int(attn_num_blocks)
    num_blocks = cdiv(vllm_config.model_config.max_model_len, 16)
    return layer, num_blocks


class MambaAttentionMetadataBuilder:
    def __init__(self, vllm_config):
        self.compilation_config = vllm_config.compilation_config
        self.decode_cudagraph_max_bs = vllm_config.scheduler_config.max_num_seqs
        if self.compilation_config.max_cudagraph_capture_size is not None:
            self.decode_cudagraph_max_bs = min(
                self.decode_cudagraph_max_bs,
                self.compilation_config.max_cudagraph_capture_size,
            )
        self.max_num_blocks = cdiv(vllm_config.model_config.max_model_len, 16)
