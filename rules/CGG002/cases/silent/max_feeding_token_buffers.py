# max() with the capture size is fine where the result counts tokens, not blocks.
class GPUModelRunner:
    def __init__(self, vllm_config):
        cc = vllm_config.compilation_config
        self.max_num_tokens = max(vllm_config.scheduler_config.max_num_batched_tokens, cc.max_cudagraph_capture_size)
        self.input_ids = torch.zeros(max(self.max_num_reqs, cc.max_cudagraph_capture_size), dtype=torch.int32)

    def bounded(self):
        num_blocks = max(min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1, self.max_num_reqs)
        return num_blocks
